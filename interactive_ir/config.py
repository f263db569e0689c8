"""Settings in one place: the shared defaults, the environment helpers, and the registry of every setting.

Each config dataclass lives next to the code that uses it and documents every field with a comment beside
it; `apply_env` fills fields from `<PREFIX><FIELD_NAME_UPPER>` environment variables and `apply_overrides`
from CLI flags, both with `dataclasses.replace`. `SECTIONS` lists those dataclasses (explicitly, by
"module:Class", imported only when asked for: this module is the bottom layer) and `ENV_VARS` the variables
read outside them; `settings()` turns both into rows, which `python -m interactive_ir config` prints and
the settings table of docs/settings.md is generated from. Nothing here reads the environment at import.
"""

from __future__ import annotations

import dataclasses
import importlib
import os
import typing
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

ENV_PREFIX = "IIR_"

# --- shared defaults: declared here once, read by every config that has them ----------------------------
DEFAULT_K = 10  # results shown per round (EngineConfig, SearchConfig, eval's RunConfig, a study, `search`)
PAGE_K = 2 * DEFAULT_K  # results per round on the web app's page (AppConfig.k, IIR_K): a screenful of its dense grid
MAX_TEXT_CHARS = 2000  # longest description, answer or relative caption accepted (the engine and the retriever)
TEXT_LIMIT_ENV = ENV_PREFIX + "MAX_TEXT_CHARS"  # the one variable that raises it (EngineConfig.max_text_chars)
DEFAULT_EMBEDDER = "open_clip:ViT-B-32:laion2b_s34b_b79k"
OFFLINE_TEXT_EMBEDDER = "text:all-MiniLM-L6-v2"
CACHE_DIR = "~/.cache/interactive_ir"  # the web app's thumbnails and kept uploads (IIR_CACHE_DIR)


def _convert(value: str, annotation: Any) -> Any:
    ann = str(annotation)
    if "bool" in ann:
        return value.strip().lower() in {"1", "true", "yes", "on"}
    if "int" in ann and "float" not in ann:
        return int(value)
    if "float" in ann:
        return float(value)
    if "Path" in ann:
        return Path(value)
    return value


def apply_env(cfg: T, prefix: str = ENV_PREFIX, environ: typing.Mapping[str, str] | None = None) -> T:
    """Return a copy of `cfg` with fields overridden by `IIR_<NAME>` environment variables."""
    env = os.environ if environ is None else environ
    changes = {}
    for f in dataclasses.fields(cfg):  # type: ignore[arg-type]
        key = prefix + f.name.upper()
        if key in env and env[key] != "":
            try:
                changes[f.name] = _convert(env[key], f.type)
            except ValueError as e:
                raise ValueError(f"{key}={env[key]!r} is not a valid {f.type}") from e
    return dataclasses.replace(cfg, **changes) if changes else cfg  # type: ignore[type-var]


def apply_overrides(cfg: T, **overrides: Any) -> T:
    """Return a copy of `cfg` with the given non-None overrides (e.g. from CLI flags)."""
    names = {f.name for f in dataclasses.fields(cfg)}  # type: ignore[arg-type]
    changes = {k: v for k, v in overrides.items() if v is not None and k in names}
    return dataclasses.replace(cfg, **changes) if changes else cfg  # type: ignore[type-var]


def cache_dir() -> Path:
    """Folder for the web app's thumbnails (IIR_CACHE_DIR, default ~/.cache/interactive_ir); weights use the HF cache."""
    return Path(os.environ.get("IIR_CACHE_DIR") or Path(CACHE_DIR).expanduser())


def text_limit(environ: typing.Mapping[str, str] | None = None) -> int:
    """The longest text accepted: `IIR_MAX_TEXT_CHARS` when set, else `MAX_TEXT_CHARS` (read when called)."""
    env = os.environ if environ is None else environ
    raw = (env.get(TEXT_LIMIT_ENV) or "").strip()
    if not raw:
        return MAX_TEXT_CHARS
    try:
        return int(raw)
    except ValueError as e:
        raise ValueError(f"{TEXT_LIMIT_ENV}={raw!r} is not a whole number of characters") from e


# --- the registry --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Section:
    """One config dataclass whose fields are read from `<prefix><FIELD>` environment variables."""

    target: str  # "module:Class" of the dataclass
    prefix: str  # the environment prefix of its fields
    factory: str = ""  # "module:function" that applies the environment (called with no arguments); "" = none
    flag_only: tuple[str, ...] = ()  # fields its factory does not read from the environment


@dataclass(frozen=True)
class EnvVar:
    """An environment variable read outside the config dataclasses."""

    name: str
    help: str  # what it sets, in one line
    read_by: str  # the module(s) reading it, relative to interactive_ir/ (app.py: the repository's)
    default: str = ""  # its default in words, or "" (none)
    default_of: str = ""  # "module:NAME[.attr]" whose value is the default (instead of `default`)
    secret: bool = False  # its current value is never printed


SECTIONS: tuple[Section, ...] = (
    # k: one setting, IIR_K, is AppConfig's (the page's 20); every entry point gives the engine its k
    Section("interactive_ir.core.text_search:EngineConfig", "IIR_", "interactive_ir.core.text_search:engine_config",
            flag_only=("k",)),
    Section("interactive_ir.assembly.options:AppConfig", "IIR_", "interactive_ir.assembly.options:app_config",
            flag_only=("embedder",)),
    Section("interactive_ir.ui.serving.tabs:TabLimits", "IIR_", "interactive_ir.ui.serving.tabs:tab_limits"),
    Section("interactive_ir.assembly.photo_config:PhotoDemoConfig", "IIR_PHOTO_",
            "interactive_ir.assembly.photo_config:photo_demo_config"),
    Section("interactive_ir.ui.serving.uploads:UploadPolicy", "IIR_UPLOAD_",
            "interactive_ir.ui.serving.uploads:upload_policy"),
    Section("interactive_ir.modes.conversation.plugir.config:PlugIRConfig", "IIR_PLUGIR_",
            "interactive_ir.modes.conversation.plugir.config:plugir_config"),
    Section("interactive_ir.modes.feedback.config:FeedbackConfig", "IIR_FEEDBACK_",
            "interactive_ir.modes.feedback.config:feedback_config"),
    Section("interactive_ir.modes.composed.config:ComposedConfig", "IIR_COMPOSED_",
            "interactive_ir.modes.composed.config:composed_config"),
    Section("interactive_ir.backends.llm_config:LLMConfig", "IIR_LLM_", "interactive_ir.backends.llm_config:llm_config"),
    Section("interactive_ir.backends.visitor_llm:SignInConfig", "IIR_", "interactive_ir.backends.visitor_llm:sign_in_config"),
    Section("interactive_ir.study.log:StudyLogConfig", "IIR_STUDY_", "interactive_ir.study.log:study_log_config"),
    Section("interactive_ir.study.page.guard:StudyGuard", "IIR_STUDY_", "interactive_ir.study.page.guard:study_guard"),
    Section("interactive_ir.retrieval.belief:BeliefConfig", "IIR_BELIEF_", "interactive_ir.retrieval.belief:belief_config"),
    Section("interactive_ir.evaluation.simulators:SimConfig", "IIR_SIM_"),
    Section("interactive_ir.index.build_sizes:BuildSizes", "IIR_BUILD_", "interactive_ir.index.build_sizes:build_sizes"),
    Section("interactive_ir.index.url_fetch:FetchConfig", "IIR_FETCH_", "interactive_ir.index.url_fetch:fetch_config"),
)

_LLMS = "interactive_ir.backends.llms"
ENV_VARS: tuple[EnvVar, ...] = (
    EnvVar("IIR_EXCLUDE_SHOWN", "the old name of IIR_HIDE_SEEN, still read (IIR_HIDE_SEEN wins when both are set)",
           "core/text_search.py"),
    EnvVar("IIR_EMBEDDER", "embedder spec of the demo gallery and of `index` (a flag overrides it)",
           "assembly/app_index.py, commands/index_cmd.py", default_of="interactive_ir.config:DEFAULT_EMBEDDER"),
    EnvVar("IIR_LLM_MODEL", "model of the OpenAI-compatible endpoint chosen when a key or base URL is set and "
           "IIR_LLM is not", "backends/llms.py", default_of=f"{_LLMS}:DEFAULT_OPENAI_MODEL"),
    EnvVar("IIR_LLM_API_KEY", "API key of OpenAI-compatible endpoints (else OPENAI_API_KEY)",
           "backends/llm_openai.py, backends/llms.py", secret=True),
    EnvVar("IIR_LLM_BASE_URL", "URL of an OpenAI-compatible endpoint (else OPENAI_BASE_URL, else OpenAI's)",
           "backends/llms.py"),
    EnvVar("IIR_HF_MODEL", "model asked through the Hugging Face router when HF_TOKEN is set and IIR_LLM is not",
           "backends/llms.py", default_of=f"{_LLMS}:DEFAULT_ROUTER_MODEL"),
    EnvVar("IIR_HF_ROUTER_URL", "URL of the Hugging Face inference router (hf-router: specs)", "backends/llms.py",
           default_of=f"{_LLMS}:ROUTER_URL"),
    EnvVar("IIR_GPU_LLM", "model run locally with transformers on a GPU when no endpoint is configured",
           "backends/llms.py", default_of=f"{_LLMS}:DEFAULT_GPU_MODEL"),
    EnvVar("IIR_DEVICE", "torch device of the models and of GPU searches (cuda, mps, cpu, cuda:1 ...)",
           "backends/_torch.py", "cuda, else mps, else cpu"),
    EnvVar("SPACE_ID", "set by Hugging Face Spaces: the photo demo's \"auto\" is on there (IIR_PHOTO_DEMO)",
           "assembly/photo_config.py"),
    EnvVar("SPACES_ZERO_GPU", "set by Hugging Face ZeroGPU: spaces imported first, local model calls (LLM, "
           "captioner, VLM) in GPU slots, searches on the CPU", "ui/serving/gpu.py"),
    EnvVar("IIR_SEARCH_DEVICE", "where searches run: auto, faiss, faiss-gpu or torch (SearchConfig.device)",
           "retrieval/retriever.py", default_of="interactive_ir.retrieval.retriever:SearchConfig.device"),
    EnvVar("IIR_ASSUME_CUDA", "any value: look for a CUDA GPU even without /dev/nvidia* device nodes",
           "retrieval/search_device.py"),
    EnvVar("IIR_NPROBE", "ivf-pq lists searched per query (overrides the index's tuned nprobe)", "index/kinds.py",
           "the index's own"),
    EnvVar("IIR_RERANK_CODES", "1: an ivf-pq index holds its SQ8 re-rank codes in RAM (N x width bytes) and reads "
           "only a shortlist of candidates from the fp16 file (for vectors larger than the page cache)",
           "index/rerank.py", "0"),
    EnvVar("IIR_EF_SEARCH", "hnsw search beam (overrides the index's ef_search)", "index/kinds.py", "the index's own"),
    EnvVar("IIR_STORE", "vector store of an opened index: milvus-lite:PATH or milvus://HOST:PORT/NAME",
           "index/store.py", "the index's faiss files"),
    EnvVar("IIR_MATRIX_ROWS_MAX", "the most rows an index may have for the retriever to keep a float32 matrix of it "
           "and the belief to cover every row; above it the belief covers a pool that grows with the evidence (0: never)",
           "retrieval/retriever.py", default_of="interactive_ir.retrieval.retriever:MATRIX_ROWS_MAX"),
    EnvVar("IIR_MAX_PIXELS", "larger images are refused (decompression-bomb guard)", "index/imageio.py",
           default_of="interactive_ir.index.imageio:MAX_PIXELS"),
    EnvVar("IIR_INDEX_KIND", "index kind built by `index`: exact, ivf-pq, hnsw or auto (--kind overrides it)",
           "commands/index_cmd.py", "auto"),
    EnvVar("IIR_INDICES_DIR", "folder of the built indices (the demo gallery's too)", "assembly/app_index.py",
           "<repo>/indices"),
    EnvVar("IIR_CACHE_DIR", "folder of the web app's thumbnails and kept uploads", "config.py",
           default_of="interactive_ir.config:CACHE_DIR"),
    EnvVar("IIR_MEDIA_SECRET", "key of the image URL tokens; set it to keep URLs stable across restarts",
           "ui/serving/files.py", "random per process", secret=True),
    EnvVar("IIR_MALLOC_ARENAS", "glibc malloc arenas set at start-up; 0 leaves glibc's default",
           "ui/serving/malloc_arenas.py", default_of="interactive_ir.ui.serving.malloc_arenas:DEFAULT_ARENAS"),
    EnvVar("IIR_MALLOC_TRIM_S", "seconds between glibc malloc_trim calls handing free heap pages back; 0: never",
           "ui/serving/malloc_trim.py", default_of="interactive_ir.ui.serving.malloc_trim:DEFAULT_EVERY_S"),
    EnvVar("IIR_GRADIO_SESSION_FIX", "0: leave Gradio's per-tab session records growing (to measure the fix)",
           "ui/serving/session_ids.py", "1"),
    EnvVar("IIR_STUDY_ADMIN_PASSWORD", "password of a study's /admin page (off when unset; weak ones refused)",
           "study/page/admin.py, study/ui.py", secret=True),
    EnvVar("PORT", "port of the web app (also GRADIO_SERVER_PORT; --port overrides it)", "assembly/options.py",
           default_of="interactive_ir.assembly.options:AppConfig.port"),
    EnvVar("GRADIO_SERVER_NAME", "interface the web app listens on (--host overrides it)", "assembly/options.py",
           default_of="interactive_ir.assembly.options:AppConfig.host"),
    EnvVar("OPENAI_API_KEY", "API key of OpenAI-compatible endpoints; its presence makes OpenAI the default LLM",
           "backends/llm_openai.py, backends/llms.py", secret=True),
    EnvVar("OPENAI_BASE_URL", "URL of an OpenAI-compatible endpoint (after IIR_LLM_BASE_URL)", "backends/llms.py"),
    EnvVar("HF_TOKEN", "Hugging Face token; its presence makes the HF router the default LLM", "backends/llms.py",
           secret=True),
    EnvVar("HF_HUB_OFFLINE", "1: never contact the Hugging Face hub", "backends/hub.py"),
    EnvVar("HF_ENDPOINT", "the Hugging Face hub's address (a mirror)", "backends/hub.py", "https://huggingface.co"),
    EnvVar("FORWARDED_ALLOW_IPS", "uvicorn's proxies whose X-Forwarded-For it believes; IIR_TRUSTED_PROXIES sets it "
           "(when that is empty, an operator's own value stays)", "ui/serving/process.py", "none"),
    EnvVar("MALLOC_ARENA_MAX", "glibc's own arena limit; when set, IIR_MALLOC_ARENAS changes nothing",
           "ui/serving/malloc_arenas.py"),
)


@dataclass(frozen=True)
class Setting:
    """One row of the settings table."""

    section: str  # the dataclass's name, or "environment" for a variable read outside the dataclasses
    field: str  # the dataclass field ("" outside the dataclasses)
    env: str  # the environment variable ("" for a field set by flag only)
    default: str  # the default, as text
    current: str  # its value with this environment, as text ("(set)" for a secret that is set)
    changed: bool  # the environment changes it
    help: str  # one line of meaning: the comment beside the field in the source
    source: str  # the file declaring (or reading) it, relative to interactive_ir/


def resolve(ref: str) -> Any:
    """The object named by "module:NAME[.attr...]", importing the module now."""
    module, _, name = ref.partition(":")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def field_help(cls: type) -> dict[str, str]:
    """Each field's comment in `cls`'s source: the one beside it, joined with the comment-only lines that
    continue it (those right below, up to the next statement)."""
    import ast
    import inspect
    import io
    import textwrap
    import tokenize

    source = textwrap.dedent(inspect.getsource(cls))
    comments: dict[int, tuple[str, bool]] = {}  # line -> (text, the line holds only the comment)
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = (tok.string.lstrip("#").strip(), not tok.line[: tok.start[1]].strip())
    out: dict[str, str] = {}
    for stmt in typing.cast(ast.ClassDef, ast.parse(source).body[0]).body:
        if not (isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name)):
            continue
        line = stmt.end_lineno or stmt.lineno
        text, alone = comments.get(line, ("", True))
        parts = [text] if text and not alone else []
        line += 1
        while parts and line in comments and comments[line][1] and not comments[line][0].startswith("---"):
            parts.append(comments[line][0])
            line += 1
        out[stmt.target.id] = " ".join(p for p in parts if p)
    return out


def show(value: Any) -> str:
    """A value as the table shows it."""
    if isinstance(value, str):
        return value if value else '""'
    return str(value)


def _default_of(f: dataclasses.Field) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:  # type: ignore[misc]
        return f.default_factory()  # type: ignore[misc]
    return dataclasses.MISSING


def _source(obj: Any) -> str:
    import inspect

    path = Path(inspect.getsourcefile(obj) or "")
    root = Path(__file__).resolve().parent
    try:
        return str(path.resolve().relative_to(root))
    except ValueError:
        return path.name


def section_settings(section: Section, environ: typing.Mapping[str, str]) -> list[Setting]:
    """The rows of one config dataclass, with their values under `environ`."""
    cls = resolve(section.target)
    helps, where = field_help(cls), _source(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = _default_of(f)
        env = "" if f.name in section.flag_only else section.prefix + f.name.upper()
        raw = environ.get(env, "") if env else ""
        current, changed = show(default), False
        if raw != "":
            try:
                value = _convert(raw, f.type)
                current, changed = show(value), value != default
            except ValueError:
                current, changed = f"{raw!r} (not a valid {f.type})", True
        rows.append(Setting(cls.__name__, f.name, env, show(default), current, changed, helps.get(f.name, ""), where))
    return rows


def env_var_setting(var: EnvVar, environ: typing.Mapping[str, str]) -> Setting:
    """The row of one variable read outside the dataclasses."""
    default = show(resolve(var.default_of)) if var.default_of else (var.default or '""')
    raw = environ.get(var.name, "")
    if var.secret:
        current = "(set)" if raw else default
    else:
        current = raw if raw else default
    return Setting("environment", "", var.name, default, current, bool(raw) and raw != default, var.help,
                   var.read_by)


def settings(environ: typing.Mapping[str, str] | None = None) -> list[Setting]:
    """Every setting: the fields of each dataclass in `SECTIONS`, then the variables in `ENV_VARS`, each with
    its value under `environ` (default: the process environment, read now)."""
    env = os.environ if environ is None else environ
    rows = [row for section in SECTIONS for row in section_settings(section, env)]
    return rows + [env_var_setting(var, env) for var in ENV_VARS]
