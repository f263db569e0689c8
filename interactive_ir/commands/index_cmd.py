"""`python -m interactive_ir index --images DIR --out indices/NAME [--image-list FILE] [--captions FILE] [--kind KIND] ...`

Also `index --vectors FILE.npy|DIR --ids FILE --out DIR --embedder SPEC` (precomputed embeddings) and
`index verify DIR` (checksums and links of an index, on demand), `index export DIR --store SPEC`
(vectors and photo metadata into a Milvus collection) and `index tune DIR [--queries FILE.npy]` (choose an
ivf-pq index's nprobe again, e.g. on real encoded queries).

Also `index --hf-dataset NAME|./folder --out DIR` (a Hub dataset, local Parquet files or an ImageFolder,
streamed; image URLs, `--url-column`, are fetched with the `--fetch-*` settings) and `index push DIR --repo
USER/NAME` (upload an index with a card; load it with hf://USER/NAME).
"""

from __future__ import annotations

import argparse
import logging
from pathlib import Path

from interactive_ir.assembly.specs import NO_MODEL_HELP
from interactive_ir.commands.argtypes import number, plain_path, whole
from interactive_ir.config import DEFAULT_EMBEDDER

log = logging.getLogger(__name__)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("action", nargs="?", choices=["build", "verify", "export", "tune", "push"], default="build",
                   help="build (default); verify: check an index's checksums and links (index verify DIR); "
                   "export: copy an index's vectors and photo metadata into a Milvus collection (index export DIR --store SPEC); "
                   "tune: choose an ivf-pq index's nprobe again from calibration queries (index tune DIR); "
                   "push: upload an index to the Hugging Face Hub (index push DIR --repo USER/NAME)")
    p.add_argument("target", nargs="?", type=plain_path, help="with verify, export or tune: the index folder")
    p.add_argument("--queries", type=plain_path, help="with tune: an (N, width) .npy of encoded query rows to tune on "
                   "(default: 64 stored rows plus noise)")
    p.add_argument("--target-recall", type=number(0.01, 1), default=0.95, help="with tune: recall@100 wanted (default 0.95)")
    p.add_argument("--store", help="with export: milvus://HOST:PORT/COLLECTION or milvus-lite:PATH.db "
                   "(search it with IIR_STORE=SPEC)")
    p.add_argument("--images", type=plain_path, help="folder of images (searched recursively); with --vectors: the "
                   "folder the ids are relative to")
    p.add_argument("--image-list", type=plain_path, help="index only these images: a text file, one path per line relative "
                   "to --images (every one must exist)")
    p.add_argument("--out", type=plain_path, help="index folder to create or update, e.g. indices/mine")
    p.add_argument("--captions", type=plain_path, help="captions file: JSONL, COCO captions JSON, or CSV/TSV image,caption")
    p.add_argument("--captioner", help="caption uncaptioned images with this captioner spec (e.g. "
                   f"hf:Salesforce/blip-image-captioning-base; default, or {NO_MODEL_HELP}: none)")
    p.add_argument("--embedder", default=None, help=f"embedder spec (default: IIR_EMBEDDER or {DEFAULT_EMBEDDER})")
    p.add_argument("--kind", default=None, choices=["auto", "exact", "ivf-pq", "hnsw"],
                   help="index kind (default: IIR_INDEX_KIND or auto: exact up to 300,000 images, ivf-pq above)")
    p.add_argument("--vectors", type=plain_path, help="precomputed embeddings: an (N, d) .npy file or a folder of Parquet "
                   "files with an embedding column (needs --ids)")
    p.add_argument("--ids", type=plain_path, help="with --vectors: text file, one image id per line, in the vectors' order")
    p.add_argument("--chunk-rows", type=whole(1, 10**8), default=65_536, help="with --vectors: rows per chunk (default 65536)")
    p.add_argument("--batch-size", type=whole(1, 65_536), help="images per forward pass (default: IIR_BUILD_BATCH_SIZE, else "
                   "from the device: 32 on the CPU, 256 on a CUDA GPU)")
    p.add_argument("--workers", type=whole(1, 256), help="decoding threads overlapped with encoding (default: IIR_BUILD_WORKERS, "
                   "else from the device: 2 on the CPU, the CPUs but one with a CUDA GPU)")
    p.add_argument("--rebuild", action="store_true", help="embed everything again, replacing an existing index")
    _add_hub_arguments(p)
    p.add_argument("--skip-missing-captions", action="store_true", help="ignore captions naming images not in the folder")


def _add_hub_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--hf-dataset", help="index a Hugging Face Hub dataset (USER/NAME), a local folder of Parquet files "
                   "or an ImageFolder (./folder), streaming its rows; images are stored once under --out/images")
    p.add_argument("--config", default="", help="with --hf-dataset: the dataset's config (subset)")
    p.add_argument("--split", default="train", help="with --hf-dataset: the split (default train)")
    p.add_argument("--revision", default="", help="with --hf-dataset: a branch, tag or commit (default main)")
    p.add_argument("--image-column", default="image", help="with --hf-dataset: the image column (default image; a "
                   "column of URLs is fetched)")
    p.add_argument("--url-column", default="", help="with --hf-dataset: a column of image URLs to fetch (default: the "
                   "image column, else a column of http(s) URLs found in the first rows)")
    p.add_argument("--caption-column", default="", help="with --hf-dataset: the caption column, a string or a list "
                   "of strings (default: the first of caption, captions, text, sentences)")
    p.add_argument("--id-column", default="", help="with --hf-dataset: a stable id per image (default: the file "
                   "name in an ImageFolder, else the image's content hash)")
    p.add_argument("--limit", type=whole(0), default=0, help="with --hf-dataset: index at most this many images")
    _add_fetch_arguments(p)
    p.add_argument("--repo", help="with push: the Hub repo to create or update, USER/NAME")
    p.add_argument("--repo-type", default="dataset", choices=["dataset", "model"],
                   help="with push: the repo's type (default dataset)")
    p.add_argument("--private", action="store_true", help="with push: create the repo private")
    p.add_argument("--license", default="", help="with push: the licence named in the card (e.g. cc-by-4.0)")


def _add_fetch_arguments(p: argparse.ArgumentParser) -> None:
    """Flags of `url_fetch.FetchConfig` (each overrides its IIR_FETCH_* variable)."""
    p.add_argument("--fetch-workers", type=whole(1, 256), help="with image URLs: URLs fetched at once (default 4)")
    p.add_argument("--fetch-timeout", type=number(0.01, 86_400), help="with image URLs: seconds one request may take (default 20)")
    p.add_argument("--fetch-max-bytes", type=whole(1), help="with image URLs: larger responses are skipped (default 20 MB)")
    p.add_argument("--fetch-retries", type=whole(0, 100), help="with image URLs: tries more after a 429 or 5xx (default 3)")
    p.add_argument("--fetch-backoff", type=number(0, 3600), help="with image URLs: seconds before the first retry, doubled "
                   "after (default 1)")
    p.add_argument("--fetch-max-side", type=whole(0, 100_000), help="with image URLs: longest side of the stored copy in pixels "
                   "(default 1024; 0 = as fetched)")
    p.add_argument("--fetch-cache", help="with image URLs: the cache of fetched images (default "
                   "IIR_CACHE_DIR/url-images)")
    p.add_argument("--fetch-allow-private", action="store_true", default=None, help="with image URLs: also fetch "
                   "from loopback and private addresses (off by default: a dataset cannot reach this machine's network)")


def run(args: argparse.Namespace) -> int:
    import os

    from interactive_ir.errors import BadInputError

    if args.action == "verify":
        return _verify(args.target or args.out)
    if args.action == "export":
        return _export(args.target or args.out, args.store)
    if args.action == "tune":
        return _tune(args.target or args.out, args.queries, args.target_recall)
    if args.action == "push":
        return _push(args)
    if args.target is not None:
        raise BadInputError(f"unexpected argument {args.target}: to check an index run `index verify DIR`")
    if args.out is None:
        raise BadInputError("--out is required: the index folder to create, e.g. --out indices/mine")
    if args.batch_size is not None and args.batch_size < 1:
        raise BadInputError(f"--batch-size must be at least 1, got {args.batch_size}")
    if args.workers is not None and args.workers < 1:
        raise BadInputError(f"--workers must be at least 1 (decoding threads), got {args.workers}: "
                            "use --workers 2, or 1 on a small machine")
    kind = args.kind or os.environ.get("IIR_INDEX_KIND") or "auto"
    if args.hf_dataset:
        if args.images or args.vectors or args.captions:
            raise BadInputError("--hf-dataset brings its own images and captions: drop --images, --vectors, --captions")
        return _from_dataset(args, kind)
    if args.vectors or args.ids:
        if args.image_list:
            raise BadInputError("--image-list goes with --images (a folder of images), not with --vectors")
        return _from_vectors(args, kind)
    if args.images is None:
        raise BadInputError("give --images DIR (a folder of images) or --vectors FILE --ids FILE (precomputed embeddings)")
    from interactive_ir.assembly.models import make, open_model
    from interactive_ir.assembly.specs import embedder_spec
    from interactive_ir.index.builder import BuildConfig, build_index

    sized = {"batch_size": args.batch_size} if args.batch_size else {}  # text batches; else the embedder's own
    embedder = make("embedder", embedder_spec(args.embedder), show_progress=False,
                    **sized)  # the build shows its own bar; an index needs one: "none" is no spec
    captioner = open_model("captioner", args.captioner)
    cfg = BuildConfig(images=args.images, out=args.out, captions=args.captions, batch_size=args.batch_size or 0,
                      workers=args.workers or 0, rebuild=args.rebuild, skip_missing_captions=args.skip_missing_captions,
                      kind=kind, image_list=args.image_list)  # 0: IIR_BUILD_*, else sized from the device
    report = build_index(cfg, embedder, captioner)
    print(f"indexed {report.count} images into {report.out} ({report.embedded} embedded, {report.reused} reused, "
          f"{len(report.skipped)} skipped) at {report.images_per_second:.1f} images/s "
          f"({report.batch_size} per forward pass, {report.workers} decoding thread{'s' if report.workers != 1 else ''})")
    for rel, why in report.skipped[:20]:
        print(f"  skipped {rel}: {why}")
    _fit_score_profile(report.out, embedder)
    return 0


def _fit_score_profile(out: Path, embedder) -> None:
    """Calibrate the page's "no close match" note on this collection (retrieval/score_profile.py)."""
    from interactive_ir.index import load_index
    from interactive_ir.retrieval.retriever import Retriever
    from interactive_ir.retrieval.score_profile import store_profile

    profile = store_profile(Retriever(load_index(out), embedder))
    if profile is not None:
        print(f"no-close-match calibration: {profile['false_alarm']:.1%} false alarms where the image is first, "
              f"note shown on {profile['absent_hit']:.1%} of searches whose image was removed "
              f"({profile['samples']['check_first'] + profile['samples']['check_absent']} held-out searches)")


def _from_vectors(args: argparse.Namespace, kind: str) -> int:
    from interactive_ir.assembly.models import make
    from interactive_ir.assembly.specs import embedder_spec, is_no_model
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.precomputed import VectorsConfig, build_from_vectors

    if not (args.vectors and args.ids):
        raise BadInputError("--vectors and --ids go together: the embeddings and one id per embedding")
    if not is_no_model(args.captioner):
        raise BadInputError("--captioner needs the images; with --vectors give captions with --captions FILE")
    embedder = make("embedder", embedder_spec(args.embedder))
    cfg = VectorsConfig(vectors=args.vectors, ids=args.ids, out=args.out, images=args.images,
                        captions=args.captions, kind=kind, chunk_rows=args.chunk_rows)
    from tqdm.auto import tqdm

    bar = tqdm(unit="vec", desc=f"indexing {args.vectors.name}", disable=None, leave=False)

    def progress(done: int, total: int, _msg: str) -> None:
        bar.total = total
        bar.update(done - bar.n)

    try:
        rep = build_from_vectors(cfg, embedder, progress)
    finally:
        bar.close()
    resumed = f", resumed after {rep.resumed_from:,}" if rep.resumed_from else ""
    print(f"indexed {rep.count:,} precomputed vectors into {rep.out} ({rep.kind} index{resumed})")
    return 0


def _verify(target: Path | None) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.store import verify_index

    if target is None:
        raise BadInputError("index verify needs the index folder: python -m interactive_ir index verify indices/NAME")
    index = verify_index(target)
    print(f"{target}: ok ({len(index):,} images, {index.kind} index, checksums match)")
    return 0


def _export(target: Path | None, store: str | None) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.store import load_index
    from interactive_ir.index.vector_store import export_index, open_store, parse_store

    if target is None or not store:
        raise BadInputError("index export needs the index folder and --store: python -m interactive_ir index export "
                            "indices/NAME --store milvus-lite:indices/NAME.db")
    parse_store(store)  # a malformed spec fails before the index is opened
    index = load_index(target, store="")
    rep = export_index(index, store)
    open_store(store, index.dim * (2 if index.has_captions else 1), len(index))  # read back: dimension and count
    print(f"exported {len(index):,} rows of {target} into {rep.spec}; search it with IIR_STORE='{store}'")
    if not rep.metadata:
        print("  the index holds no photo metadata (built before it was read), so the collection cannot filter: "
              "rebuild the index, then export it again")
    else:
        users = ", ".join(rep.user_fields) or "none"
        print(f"  with the photo metadata as scalar fields (date, camera, GPS, size, folder, ...); user fields: {users}")
    if rep.left_out:
        print(f"  user fields left out (a collection holds at most {len(rep.user_fields)}): {', '.join(rep.left_out)}")
    if rep.unindexed:
        print(f"  Milvus built no scalar index on {', '.join(rep.unindexed)}: filters on them scan")
    return 0


def _tune(target: Path | None, queries: Path | None, target_recall: float) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.folder_rows import FolderRows
    from interactive_ir.index.store import load_index
    from interactive_ir.index.tune import TuneConfig, load_queries, tune, write_tuning

    if target is None:
        raise BadInputError("index tune needs the index folder: python -m interactive_ir index tune indices/NAME")
    if not 0.0 < target_recall <= 1.0:
        raise BadInputError(f"--target-recall must be in (0, 1], got {target_recall}")
    index = load_index(target, store="")
    if index.kind != "ivf-pq":
        raise BadInputError(f"{target} is an {index.kind} index: only ivf-pq is tuned (exact needs no tuning; "
                            "set hnsw's efSearch with IIR_EF_SEARCH)")
    q = load_queries(queries) if queries is not None else None
    params, report = tune(index.faiss_index, index.params, FolderRows(target), TuneConfig(target=target_recall),
                          queries=q, source=str(queries) if queries is not None else "")
    write_tuning(target, params, report)
    was = index.params
    print(f"{target}: nprobe {was.nprobe} -> {params.nprobe}, re-rank {was.rerank_factor}x -> {params.rerank_factor}x k; "
          f"recall@100 {report.recall:.3f} on {report.queries} queries ({report.source}), {report.seconds:.1f} s")
    return 0


def _from_dataset(args: argparse.Namespace, kind: str) -> int:
    from interactive_ir.assembly.models import make, open_model
    from interactive_ir.assembly.specs import embedder_spec
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.hub_dataset import DatasetSource
    from interactive_ir.index.hub_index import build_from_dataset
    from interactive_ir.index.url_fetch import fetch_config

    if args.limit < 0:
        raise BadInputError(f"--limit must be 0 (all) or more, got {args.limit}")
    src = DatasetSource(args.hf_dataset, config=args.config, split=args.split, image_column=args.image_column,
                        caption_column=args.caption_column, id_column=args.id_column, limit=args.limit,
                        revision=args.revision, url_column=args.url_column)
    fetch = fetch_config(workers=args.fetch_workers, timeout_s=args.fetch_timeout, max_bytes=args.fetch_max_bytes,
                         retries=args.fetch_retries, backoff_s=args.fetch_backoff, max_side=args.fetch_max_side,
                         cache_dir=args.fetch_cache, allow_private=args.fetch_allow_private)
    sized = {"batch_size": args.batch_size} if args.batch_size else {}  # else the embedder's own (a text one has no None)
    embedder = make("embedder", embedder_spec(args.embedder), show_progress=False, **sized)
    captioner = open_model("captioner", args.captioner)
    with _FetchBar() as bar:
        report, stage = build_from_dataset(src, args.out, embedder, captioner, batch_size=args.batch_size,
                                           workers=args.workers, kind=kind, fetch=fetch, fetch_progress=bar.update)
    print(f"indexed {report.count} images from {stage.rows} rows of {args.hf_dataset} into {report.out} "
          f"({len(stage.skipped) + len(report.skipped)} skipped)")
    for line in _url_lines(stage, fetch):
        print(line)
    for where, why in (stage.skipped + report.skipped)[:20]:
        print(f"  skipped {where}: {why}")
    return 0


class _FetchBar:
    """A progress bar of the URLs fetched (on a terminal; tqdm stays quiet elsewhere), drawn from FetchStats."""

    def __enter__(self):
        import threading

        self.bar = None
        self.lock = threading.Lock()  # the fetching threads call update
        return self

    def update(self, stats) -> None:
        from tqdm.auto import tqdm

        with self.lock:
            if self.bar is None:
                self.bar = tqdm(unit="url", desc="fetching image URLs", disable=None, leave=False, mininterval=0.5)
            self.bar.set_postfix_str(f"{stats.cached} cached, {sum(stats.failed.values())} failed", refresh=False)
            self.bar.update(max(0, stats.done - self.bar.n))

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.close()


def _url_lines(stage, fetch) -> list[str]:
    """What the URLs gave: the column taken (and how), fetched, cached, failed by kind."""
    if not stage.url_column:
        return []
    lines = [f"images fetched from the URLs of column {stage.url_column!r}"]
    if stage.url_found:
        others = f"; other URL columns: {', '.join(stage.url_found[1:])}" if stage.url_found[1:] else ""
        lines[0] += f" (found: the dataset has no image column{others}; choose one with --url-column)"
    f = stage.fetch
    if f is not None:
        from interactive_ir.index.url_cache import UrlCache

        failed = f"; {sum(f.failed.values())} gave no image ({f.failures()})" if f.failed else ""
        lines.append(f"  URLs: {f.fetched} fetched ({f.bytes / 1e6:.1f} MB in {f.seconds:.1f} s), {f.cached} from "
                     f"the cache ({UrlCache(fetch.cache_dir or None, fetch.max_side).root}){failed}")
    return lines


def _push(args: argparse.Namespace) -> int:
    from interactive_ir.errors import BadInputError
    from interactive_ir.index.hub_index import push_index

    target = args.target or args.out
    if target is None or not args.repo:
        raise BadInputError("index push needs the index folder and --repo: python -m interactive_ir index push "
                            "indices/NAME --repo USER/NAME")
    rep = push_index(target, args.repo, repo_type=args.repo_type, private=args.private, license=args.license)
    spec = f"hf://{args.repo}" if args.repo_type == "dataset" else f"hf://models/{args.repo}"
    print(f"pushed {target} ({rep.files} index files, {rep.images:,} images) to {rep.url}; load it with "
          f"IIR_INDEX={spec} python app.py")
    if rep.missing:
        print(f"  {rep.missing:,} indexed images were not found on disk and were not uploaded")
    return 0
