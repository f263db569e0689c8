"""An index and its embedder as a `Retriever`, as the commands open it (`search`, `chat`, composed search,
`eval`): a built folder, or hf://USER/NAME[@REVISION] pulled from the Hub first (its vectors from Milvus where
IIR_STORE names one: `index.store`); the index's own embedder unless one is given. The app's own choice (the
demo gallery when none is given) is `app_index.prepare`."""

from __future__ import annotations

from pathlib import Path

from interactive_ir.config import DEFAULT_K


def open_retriever(index: Path | str, embedder_spec: str | None = None, k: int = DEFAULT_K,
                   tau: float | None = None):
    """The `Retriever` over `index` with its embedder (the manifest's by default), `k` results a page and the
    caption weight `tau` (None: the index's)."""
    import dataclasses

    from interactive_ir.assembly.models import make
    from interactive_ir.index import load_index
    from interactive_ir.index.hub_index import resolve_index
    from interactive_ir.retrieval.retriever import Retriever, SearchConfig

    opened = load_index(resolve_index(index, embedder_spec))  # an hf://USER/NAME index is pulled first
    embedder = make("embedder", embedder_spec or opened.embedder_spec)
    cfg = SearchConfig(k=k)
    if tau is not None:
        cfg = dataclasses.replace(cfg, tau=tau)
    return Retriever(opened, embedder, cfg)
