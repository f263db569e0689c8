"""The web app: `python app.py [--index DIR] [--llm SPEC] ...` serves the search page (default 0.0.0.0:7860).

A thin layer: options -> the process's settings (interactive_ir.ui.serving.process) -> index, models and
engine (interactive_ir.assembly, through interactive_ir.ui.startup) -> page (interactive_ir.ui, or
interactive_ir.study.ui with --study) -> serving.
With no --index it serves the bundled demo gallery, building its index on the first start; on a Space it
serves photos (interactive_ir.assembly.photo_index; the page's parts in interactive_ir.ui.photos): built before,
or built in the background while the clipart serves, then switched to on the same port.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import sys

log = logging.getLogger("interactive_ir.app")


def parse_args(argv=None) -> argparse.Namespace:
    from interactive_ir.cli import Parser
    from interactive_ir.commands.argtypes import plain_path, whole

    p = Parser(prog="app.py", description="Interactive, language-guided image retrieval: the web app.")
    from interactive_ir import __version__
    from interactive_ir.assembly.specs import DEFAULT_LLM_HELP, NO_MODEL_HELP
    from interactive_ir.config import PAGE_K

    p.add_argument("--version", action="version", version=f"interactive_ir {__version__}")
    p.add_argument("--index", type=plain_path, help="a built index folder (default: the demo gallery, built on first start)")
    p.add_argument("--embedder", help="embedder spec (default: the index's own; demo: IIR_EMBEDDER or CLIP ViT-B-32)")
    p.add_argument("--llm", help=f"LLM spec for written questions and query rewriting (default: {DEFAULT_LLM_HELP}); "
                                 f"'transformers:smollm2' loads the tiny offline model; {NO_MODEL_HELP} loads no LLM")
    p.add_argument("--captioner", help=f"captioner spec for uploaded references (default: IIR_CAPTIONER or none; "
                                       f"{NO_MODEL_HELP}: none)")
    p.add_argument("--vlm", help=f"VLM spec re-ranking reference + caption results (default: IIR_VLM or none; "
                                 f"{NO_MODEL_HELP}: none)")
    p.add_argument("-k", type=whole(1, 1000), help=f"results per round on the page (default {PAGE_K}, IIR_K)")
    p.add_argument("--host", help="interface to listen on (default 0.0.0.0, GRADIO_SERVER_NAME)")
    p.add_argument("--port", type=whole(1, 65_535), help="port (default 7860, PORT or GRADIO_SERVER_PORT)")
    p.add_argument("--concurrency", type=whole(1, 1024), help="model steps running at once (default 2, IIR_CONCURRENCY)")
    p.add_argument("--search-concurrency", type=whole(1, 1024),
                   help="retrievals running at once, apart from model steps (default 4, IIR_SEARCH_CONCURRENCY)")
    p.add_argument("--click-concurrency", type=whole(1, 1024),
                   help="marks, and other clicks, handled at once across all tabs (default 8, IIR_CLICK_CONCURRENCY)")
    p.add_argument("--queue-size", type=whole(1, 1_000_000),
                   help="most waiting events before new ones get HTTP 503 (default 1024, IIR_QUEUE_SIZE)")
    p.add_argument("--sign-in", choices=("auto", "on", "off"),
                   help="a Sign in with Hugging Face button; signed-in visitors' model calls use their own token "
                        "(default auto: on a Space with hf_oauth: true; IIR_SIGN_IN)")
    p.add_argument("--anon-llm", choices=("on", "off"),
                   help="visitors who are not signed in may use this Space's LLM within hourly budgets "
                        "(default off, IIR_ANON_LLM; budgets IIR_ANON_CALLS_PER_VISITOR, IIR_ANON_CALLS_PER_HOUR)")
    p.add_argument("--study", type=plain_path, help="a user-study file: serve the study page (interactive_ir.study.ui)")
    p.add_argument("--trusted-proxies", help="reverse proxies whose X-Forwarded-For names the client, e.g. 127.0.0.1 "
                                             "(default: none, IIR_TRUSTED_PROXIES)")
    p.add_argument("--photo-demo", choices=("auto", "on", "off"),
                   help="with no --index, serve a few thousand captioned photos from a Hub dataset (default auto: on a "
                        "Space; IIR_PHOTO_DEMO; the dataset, count and credit: IIR_PHOTO_*)")
    return p.parse_args(argv)


def main(argv=None) -> int:
    """Options, then the process's settings, then the page (the study's with --study), then serving it."""
    started = start(argv)
    if isinstance(started, int):
        return started
    try:
        serve(*started)
    except OSError as e:  # the port taken since the check, or the interface gone
        return _error(f"cannot serve on {started[2].host}:{started[2].port}: {e.strerror or e}", 1)
    return 0


def check_listen(host: str, port: int) -> str:
    """Why the app cannot listen on `host`:`port` ("" when it can): a port in use, an address this machine does
    not have, a host name that does not resolve. Checked before the index and models load (a minute or more)."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        return f"cannot listen on {host[:80]}:{port}: the host does not resolve ({getattr(e, 'strerror', None) or e})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds: a TIME_WAIT port is free
        try:
            sock.bind(address)
        except OSError as e:
            why = "the port is in use: stop the other server or choose --port" if e.errno in (98, 48, 10048) else (
                e.strerror or str(e))
            return f"cannot listen on {host[:80]}:{port}: {why}"
    return ""


def check_sign_in(sign_in) -> str:
    """Off a Space, Gradio's mocked sign-in asks the Hub who this machine's login is while the page is built:
    offline that is a traceback. Asked here first: why sign-in cannot work ("" when it can, or it is off)."""
    if not sign_in.enabled() or (os.environ.get("SYSTEM") == "spaces" and os.environ.get("SPACE_ID")):
        return ""
    import huggingface_hub

    if not huggingface_hub.get_token():  # HF_TOKEN, or `hf auth login`'s
        return ""  # the page says so itself, in one line (visitor_llm.check_sign_in_possible)
    try:
        huggingface_hub.whoami()
    except Exception as e:  # offline, a refused token: any failure of the Hub's client
        text = " ".join(str(e).split())[:120]
        return (f"--sign-in on off a Space needs the Hugging Face Hub to check this machine's login, and it failed "
                f"({type(e).__name__}: {text}): go online, or turn sign-in off (--sign-in off, IIR_SIGN_IN=off)")
    return ""


def start(argv=None):
    """(page, engine, settings, photo switch or None) ready to serve, or an exit code. On ZeroGPU `spaces` is
    imported first, before anything can touch CUDA (`ui.serving.gpu.import_spaces_first`)."""
    from interactive_ir.ui.serving.gpu import import_spaces_first
    from interactive_ir.ui.serving.logs import setup_logging

    setup_logging()
    try:
        import_spaces_first()
    except RuntimeError as e:
        return _error(e, 2)
    args = parse_args(argv)
    from interactive_ir.assembly.options import app_config
    from interactive_ir.assembly.photo_config import photo_demo_config
    from interactive_ir.backends.visitor_llm import sign_in_config
    from interactive_ir.errors import IIRError
    from interactive_ir.ui.serving.process import install

    try:
        cfg = app_config(**{k: v for k, v in vars(args).items()})
        sign_in = sign_in_config(sign_in=args.sign_in, anon_llm=None if args.anon_llm is None else
                                 args.anon_llm == "on")
        photos = photo_demo_config(demo=args.photo_demo)
    except ValueError as e:
        return _error(e, 2)
    if cfg.study is not None and importlib.util.find_spec("interactive_ir.study.ui") is None:
        return _error("study mode is not available (interactive_ir.study.ui is missing)", 2)
    try:
        install(trusted_proxies=cfg.trusted_proxies)  # once, before any server thread starts: memory stays flat with use (issue 15)
    except ValueError as e:
        return _error(e, 2)
    for why in (check_listen(cfg.host, cfg.port), check_sign_in(sign_in)):
        if why:
            return _error(why, 1)
    try:
        demo, engine, switch = build_page(cfg, sign_in, photos)
    except IIRError as e:  # no index, a bad study file, a weak admin password
        return _error(e, 1)
    return demo, engine, cfg, switch


def _error(e, code: int) -> int:
    print(f"app.py: error: {e}", file=sys.stderr)
    return code


def build_page(cfg, sign_in=None, photos=None):
    """(page, engine, photo switch or None): the index, models and engine for `cfg`, and the search page over
    them, or the study's page with --study (on the index its study file names: `study.index_choice`).
    `photos`: the photo demo's config (None: IIR_PHOTO_*); the switch is there while its index is built."""
    from interactive_ir.assembly.photo_config import PhotoDemoConfig
    from interactive_ir.ui.startup import load_app

    if cfg.study is not None:
        from interactive_ir.study.index_choice import with_study_index
        from interactive_ir.study.page.admin import ADMIN_ENV, check_password_strength
        from interactive_ir.study.ui import build_study_demo

        check_password_strength(os.environ.get(ADMIN_ENV, ""))  # before any model loads (a minute or more)
        parts = load_app(with_study_index(cfg), photos=PhotoDemoConfig(demo="off"))  # a study keeps its index
        return build_study_demo(parts.engine, parts.notes, cfg.study), parts.engine, None
    from interactive_ir.ui import build_demo
    from interactive_ir.ui.photos.switch import PhotoSwitch, page_maker

    parts = load_app(cfg, photos=photos)

    def page(engine, notes, photo_note=None):
        return build_demo(engine, notes, questions_off_reason=parts.questions_off_reason,
                          search_concurrency=cfg.search_concurrency, click_concurrency=cfg.click_concurrency,
                          sign_in=sign_in, photo_note=photo_note)

    switch = PhotoSwitch(parts.photos, page_maker(parts, page)) if parts.photos is not None else None
    return page(parts.engine, parts.notes, switch.note() if switch else None), parts.engine, switch


def serve(demo, engine, cfg, switch=None) -> None:
    """Serve `demo` until the process is stopped; with a photo `switch`, the photo page once it is ready."""
    launch(demo, engine, cfg)
    if switch is not None:
        demo = switch.run(demo, lambda page, eng: launch(page, eng, cfg))
    demo.block_thread()


def launch(demo, engine, cfg) -> None:
    """Start serving `demo` on the configured port (returns at once)."""
    from interactive_ir.ui import launch_options
    from interactive_ir.ui.serving.logs import browser_url

    demo.queue(default_concurrency_limit=cfg.concurrency, max_size=cfg.queue_size)
    demo.launch(server_name=cfg.host, server_port=cfg.port, quiet=True, prevent_thread_lock=True,
                **launch_options(engine))
    url = browser_url(cfg.host, cfg.port)
    where = "" if f"//{cfg.host}:" in url else f" (listening on {cfg.host}:{cfg.port})"
    log.info("ready: open %s in a browser%s", url, where)


if __name__ == "__main__":
    sys.exit(main())
