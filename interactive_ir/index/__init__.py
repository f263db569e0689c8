"""Prebuilt indices: building (`builder`, `precomputed`, `writer`), loading (`store`, `metadata`), index
kinds (`kinds`) and where vectors live (`vector_store`: the folder or a Milvus collection)."""

from interactive_ir.index.store import ImageIndex, IndexRecord, load_index, verify_index

__all__ = ["ImageIndex", "IndexRecord", "load_index", "verify_index"]
