"""Which LLM runs by default, and the Hugging Face router path, against a local fake server (no network)."""

from __future__ import annotations

import pytest
from test_llms import server_factory  # noqa: F401  (the fake OpenAI-compatible server fixture)

from interactive_ir.backends import make_llm
from interactive_ir.backends.llms import (
    DEFAULT_GPU_MODEL,
    DEFAULT_ROUTER_MODEL,
    ROUTER_URL,
    default_llm_spec,
    is_tiny_llm,
)
from interactive_ir.errors import BackendError, BackendUnavailable


@pytest.fixture
def no_hub(monkeypatch):
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda *a, **k: False)


def test_hf_token_picks_the_router_unless_something_else_is_asked(no_hub):
    assert default_llm_spec({"HF_TOKEN": "hf_x"}, gpu=False) == f"hf-router:{DEFAULT_ROUTER_MODEL}"
    assert default_llm_spec({"HF_TOKEN": "hf_x", "IIR_HF_MODEL": "org/m"}, gpu=True) == "hf-router:org/m"
    assert default_llm_spec({"HF_TOKEN": "hf_x", "IIR_LLM": "fake"}) == "fake"  # IIR_LLM always wins
    assert default_llm_spec({"HF_TOKEN": "hf_x", "OPENAI_API_KEY": "sk"}).startswith("openai:")
    assert default_llm_spec({"HF_TOKEN": " "}, gpu=False) != f"hf-router:{DEFAULT_ROUTER_MODEL}"


def test_a_gpu_without_a_key_runs_a_small_instruct_model(monkeypatch):
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda *a, **k: True)
    assert default_llm_spec({}, gpu=True) == f"transformers:{DEFAULT_GPU_MODEL}"
    assert default_llm_spec({"IIR_GPU_LLM": "org/small"}, gpu=True) == "transformers:org/small"
    spec = default_llm_spec({}, gpu=False)
    assert spec is None or is_tiny_llm(spec)  # SmolLM2 only where nothing else can run


def test_tiny_llm_is_recognised():
    assert is_tiny_llm("transformers:smollm2") and is_tiny_llm("llama-cpp:/x/SmolLM2-135M-Instruct.Q4_1.gguf")
    assert not is_tiny_llm(f"transformers:{DEFAULT_GPU_MODEL}") and not is_tiny_llm("hf-router:x")


def test_router_backend_sends_the_hf_token_to_the_router(server_factory, monkeypatch):  # noqa: F811
    srv = server_factory()
    monkeypatch.setenv("HF_TOKEN", "hf_secret")
    llm = make_llm(f"hf-router:org/model@{srv.url}")
    assert llm.base_url == srv.url and llm.generate(["hello"]) == ["echo: hello"]
    assert srv.requests[0]["auth"] == "Bearer hf_secret" and srv.requests[0]["body"]["model"] == "org/model"
    monkeypatch.setenv("IIR_HF_ROUTER_URL", srv.url)  # the URL from the environment
    assert make_llm("hf-router:").model == DEFAULT_ROUTER_MODEL
    assert make_llm("hf-router:org/m").base_url == srv.url
    monkeypatch.delenv("IIR_HF_ROUTER_URL")
    assert make_llm("hf-router:org/m").base_url == ROUTER_URL  # built, never called: no network


def test_router_without_a_token_or_with_a_bad_url(monkeypatch):
    monkeypatch.delenv("HF_TOKEN", raising=False)
    with pytest.raises(BackendUnavailable, match="HF_TOKEN"):
        make_llm("hf-router:org/m")
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    from interactive_ir.errors import BadInputError

    with pytest.raises(BadInputError, match="http"):
        make_llm("hf-router:org/m@ftp://x")


def test_a_failing_or_slow_router_is_a_clear_error(server_factory, monkeypatch):  # noqa: F811
    monkeypatch.setenv("HF_TOKEN", "hf_x")
    srv = server_factory(plan=["500", "500"])
    llm = make_llm(f"hf-router:org/m@{srv.url}", max_retries=1, backoff_s=0.01)
    with pytest.raises(BackendError, match="HTTP 500"):
        llm.generate(["hi"])
    slow = server_factory(sleep_s=1.0)
    llm = make_llm(f"hf-router:org/m@{slow.url}", max_retries=0, timeout_s=0.2)
    with pytest.raises(BackendError, match="no reply"):
        llm.generate(["hi"])


def test_startup_says_in_plain_words_where_the_llm_runs():
    from interactive_ir.assembly.model_notes import llm_note

    assert "Hugging Face inference router" in llm_note("hf-router:org/m") and "org/m" in llm_note("hf-router:org/m")
    tiny = llm_note("transformers:smollm2")
    assert "very small offline model" in tiny and "HF_TOKEN" in tiny
