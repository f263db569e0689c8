"""Indices and the Hugging Face Hub: build one from a dataset (`build_from_dataset`), push one to a Hub repo
with a generated card (`push_index`), and open one from `hf://USER/NAME[@REVISION]` (`pull_index`).

A pull reads `manifest.json` first (another embedder's index is refused before anything large is
downloaded), then only the files the manifest lists and the images, into the Hub cache (HF_HOME). Every
index file is checked against the manifest's sha256; a mismatch deletes the downloaded blob, so nothing
corrupt stays in the cache. The pulled index is opened through a small folder of links beside the cache
(`iir-indices/`), whose manifest points at the cached images. With the Hub unreachable, a copy pulled
before is served from the cache.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from interactive_ir.errors import BadInputError, HubError, HubUnreachableError, IndexBuildError, IndexLoadError
from interactive_ir.index.dataset_stage import stage_rows
from interactive_ir.index.hub_dataset import COLUMNS_FILE, DatasetSource, StageReport, _raise_hub

log = logging.getLogger(__name__)

HF_PREFIX = re.compile(r"^hf:/+")
VIEWS = "iir-indices"  # folder beside the Hub cache holding each pulled index's links and manifest
DOWNLOAD_THREADS = 8


# --- build from a dataset ---------------------------------------------------------------------------


def build_from_dataset(src: DatasetSource, out: Path, embedder, captioner=None, *, batch_size: int = 32,
                       workers: int = 2, kind: str = "auto", fetch=None, fetch_progress=None, progress=None):
    """Stream `src` into a staging folder beside `out`, build the index there, move the images into it and
    rename it into place. Image URLs are fetched with `fetch` (a `url_fetch.FetchConfig`; None: from the
    environment), `fetch_progress(FetchStats)` after each. `progress(done, total, message)`: called as the
    images are embedded (`builder.build_index`). Returns (BuildReport, StageReport). Nothing is left behind
    on failure (fetched images stay in the URL cache, for the next try)."""
    from interactive_ir.index.builder import BuildConfig, build_index, check_out

    out = Path(out).resolve()
    check_out(out)
    staging = out.parent / f".{out.name}.dataset-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    try:
        caps, cols = staging / "captions.jsonl", staging / COLUMNS_FILE
        stage = stage_rows(src, staging / "images", caps, cols, fetch, fetch_progress)
        if stage.images == 0:
            first = stage.skipped[0][1] if stage.skipped else "no rows"
            raise IndexBuildError(f"none of the {stage.rows} rows of {src.name} gave an image (first problem: {first})")
        cfg = BuildConfig(images=staging / "images", out=staging / "index", batch_size=batch_size, workers=workers,
                          captions=caps if caps.stat().st_size else None, rebuild=True, kind=kind)
        report = build_index(cfg, embedder, captioner, progress=progress)
        index = staging / "index"
        (staging / "images").rename(index / "images")
        cols.rename(index / COLUMNS_FILE)
        manifest = json.loads((index / "manifest.json").read_text())
        manifest.update(image_root="images", captions_file=None, source=_source(src, stage))
        (index / "manifest.json").write_text(json.dumps(manifest, indent=2))
        _replace(index, out)
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    report.out = out
    return report, stage


def _source(src: DatasetSource, stage: StageReport) -> dict:
    out = {"hf_dataset": src.name if not src.local else str(Path(src.name).expanduser().resolve()),
           "config": src.config, "split": src.split, "revision": src.revision, "image_column": src.image_column,
           "caption_column": src.caption_column, "id_column": src.id_column, "limit": src.limit,
           "rows": stage.rows, "skipped_rows": len(stage.skipped)}
    if stage.fetch is not None:  # the images are stored copies of URLs (kept in columns.jsonl, by image id)
        out.update(url_column=stage.url_column, stored_max_side=stage.fetch.max_side,
                   urls={"fetched": stage.fetch.fetched, "cached": stage.fetch.cached,
                         "failed": dict(stage.fetch.failed)})
    return out


def _replace(new: Path, out: Path) -> None:
    old = None
    if out.exists():
        old = out.parent / f".{out.name}.old-{os.getpid()}"
        out.rename(old)
    new.rename(out)
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


# --- push ---------------------------------------------------------------------------------------------


@dataclass
class PushReport:
    url: str  # the repo's address on the Hub
    files: int  # index files uploaded
    images: int  # images uploaded
    missing: int  # indexed images not found on disk (not uploaded)


def push_index(folder: Path, repo: str, *, repo_type: str = "dataset", private: bool = False,
               license: str = "") -> PushReport:
    """Upload an index (its files, its images under images/, a card) to a Hub repo, creating the repo."""
    from huggingface_hub import CommitOperationAdd, HfApi

    from interactive_ir.backends.hub import hub_endpoint, hub_token
    from interactive_ir.index.store import verify_index

    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo or ""):
        raise BadInputError(f"--repo {repo!r} must be USER/NAME (or ORG/NAME)")
    if repo_type not in ("dataset", "model"):
        raise BadInputError(f"--repo-type must be dataset or model, not {repo_type!r}")
    index = verify_index(Path(folder))  # every checksum checked: nothing corrupt is published
    manifest = dict(index.manifest)
    ops = [CommitOperationAdd(name, str(Path(folder) / name)) for name in manifest["files"]]
    images = missing = 0
    root = index.image_root
    for iid in index.ids:
        p = root / iid
        if p.is_file():
            ops.append(CommitOperationAdd(f"images/{iid}", str(p)))
            images += 1
        else:
            missing += 1
    if (Path(folder) / COLUMNS_FILE).is_file():
        ops.append(CommitOperationAdd(COLUMNS_FILE, str(Path(folder) / COLUMNS_FILE)))
    manifest.update(image_root="images", captions_file=None, link_roots=[])
    ops.append(CommitOperationAdd("manifest.json", json.dumps(manifest, indent=2).encode()))
    ops.append(CommitOperationAdd("README.md", index_card(manifest, repo, repo_type, license, images).encode()))
    token = hub_token()
    if not token:
        raise HubError("pushing needs a Hub token with write access: log in (hf auth login) or set HF_TOKEN")
    api = HfApi(endpoint=hub_endpoint(), token=token)
    try:
        url = api.create_repo(repo, repo_type=repo_type, private=private, exist_ok=True)
        api.create_commit(repo, ops, commit_message=f"interactive_ir index: {len(index):,} images",
                          repo_type=repo_type)
    except Exception as e:  # noqa: BLE001 - Hub failures become one line
        _raise_hub(e, f"{repo_type} {repo}")
    return PushReport(str(url), len(manifest["files"]), images, missing)


def index_card(manifest: dict, repo: str, repo_type: str, license: str, images: int) -> str:
    """The repo's README.md: what the index is and how to load it."""
    spec = f"hf://{repo}" if repo_type == "dataset" else f"hf://models/{repo}"
    src = manifest.get("source") or {}
    made_from = f"the Hub dataset `{src['hf_dataset']}` ({src.get('split') or 'train'})" \
        if src.get("hf_dataset") and "/" in src["hf_dataset"] and not src["hf_dataset"].startswith("/") else "a local collection"
    if src.get("url_column"):
        side = src.get("stored_max_side") or 0
        made_from += (f". Its images were fetched from the URLs of column `{src['url_column']}` and are stored here "
                      f"under `images/`{f' (copies of at most {side} px on the longer side)' if side else ''}, so "
                      "loading it never depends on the original URLs; `columns.jsonl` keeps each image's URL")
    return f"""---
license: {license or 'other'}
tags:
- interactive_ir
- image-retrieval
- faiss
---

# {repo.split('/')[-1]}: an interactive_ir image index

A prebuilt index for [interactive_ir](https://github.com/) (language-guided interactive image retrieval),
made from {made_from}.

| | |
|---|---|
| embedder | `{manifest.get('embedder')}` ({manifest.get('dim')}-d) |
| kind | `{manifest.get('kind', 'exact')}` |
| images | {manifest.get('count', 0):,} (stored under `images/`: {images:,}) |
| caption vectors | {'yes' if manifest.get('caption_vectors') else 'no'} |
| licence | {license or 'see the source data'} |

## Load it

```bash
IIR_INDEX={spec} python app.py
python -m interactive_ir search --index {spec} --text "a dog on a beach"
```

A Space can download it once at build time with `preload_from_hub` in its README header:

```yaml
preload_from_hub:
- {repo} manifest.json,faiss.index,image_emb.npy,caption_emb.npy,metadata.sqlite
```

Files are checked against the sha256 sums in `manifest.json` when loaded.
"""


# --- pull -----------------------------------------------------------------------------------------------


def is_hub_spec(value) -> bool:
    return value is not None and bool(HF_PREFIX.match(str(value)))


def parse_spec(spec: str) -> tuple[str, str, str]:
    """(repo type, USER/NAME, revision or "") of `hf://[datasets/|models/]USER/NAME[@REVISION]`."""
    rest = HF_PREFIX.sub("", str(spec).strip())
    repo_type = "dataset"
    for prefix, kind in (("datasets/", "dataset"), ("models/", "model")):
        if rest.startswith(prefix):
            rest, repo_type = rest[len(prefix):], kind
    repo, _, rev = rest.partition("@")
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise BadInputError(f"{spec!r} is not a Hub index: write hf://USER/NAME or hf://USER/NAME@REVISION")
    return repo_type, repo, rev


def resolve_index(value, expect_embedder: str | None = None) -> Path:
    """An index folder: `value` itself, or the local copy of the `hf://...` index it names (pulled first)."""
    return pull_index(str(value), expect_embedder) if is_hub_spec(value) else Path(value)


def pull_index(spec: str, expect_embedder: str | None = None) -> Path:
    """The local folder of the Hub index `spec`, downloading what the cache lacks. Raises HubError (not found,
    private, corrupt), HubUnreachableError (no network and no cached copy) or IndexLoadError (another embedder)."""
    from interactive_ir.backends.hub import endpoint_reachable

    repo_type, repo, rev = parse_spec(spec)
    offline = not endpoint_reachable()  # then only the cache is read: no retries, no wait
    manifest_file = _download(repo, "manifest.json", repo_type, rev or None, spec, offline)
    manifest = _read_manifest(manifest_file, spec)
    if expect_embedder and manifest.get("embedder") != expect_embedder:
        raise IndexLoadError(f"the Hub index {spec} was built with {manifest.get('embedder')}, not {expect_embedder}: "
                             f"load it without --embedder (it brings its own), or push an index built with "
                             f"{expect_embedder}")
    snapshot = manifest_file.parent
    commit = snapshot.name
    view = _view_dir(repo_type, repo, commit)
    if (view / "complete").is_file():
        return view  # pulled and verified before: nothing to download or hash again
    if offline:
        raise HubUnreachableError(f"the Hub ({_endpoint()}) cannot be reached and the index {spec} was never fully "
                                  "downloaded here: connect once, or preload it (preload_from_hub)")
    for name, info in manifest["files"].items():
        f = _download(repo, name, repo_type, commit, spec)
        _verify(f, info, name, spec)
    _download_images(repo, repo_type, commit, spec)
    _write_view(view, snapshot, manifest)
    return view


def _endpoint() -> str:
    from interactive_ir.backends.hub import hub_endpoint

    return hub_endpoint()


def _download(repo: str, name: str, repo_type: str, revision: str | None, spec: str, offline: bool = False) -> Path:
    from huggingface_hub import hf_hub_download

    from interactive_ir.backends.hub import hub_cache_dir, hub_endpoint, hub_token

    try:
        return Path(hf_hub_download(repo, name, repo_type=repo_type, revision=revision, endpoint=hub_endpoint(),
                                    token=hub_token(), cache_dir=hub_cache_dir(), local_files_only=offline))
    except Exception as e:  # noqa: BLE001
        _raise_hub(e, f"the Hub index {spec}")


def _read_manifest(path: Path, spec: str) -> dict:
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise HubError(f"the Hub index {spec} has an unreadable manifest.json ({e})") from e
    if not isinstance(manifest, dict) or not isinstance(manifest.get("files"), dict) or "embedder" not in manifest:
        raise HubError(f"{spec} is not an interactive_ir index (its manifest.json lists no files and no embedder)")
    bad = [n for n in manifest["files"] if "/" in n or n.startswith(".")]
    if bad:
        raise HubError(f"the Hub index {spec} lists unsafe file names ({bad[0]!r})")
    return manifest


def _verify(path: Path, info: dict, name: str, spec: str) -> None:
    """Compare a downloaded file with the manifest; on a mismatch delete it from the cache and fail."""
    from interactive_ir.index.store import sha256_file

    if path.stat().st_size == info.get("bytes") and sha256_file(path) == info.get("sha256"):
        return
    blob = Path(os.path.realpath(path))
    path.unlink(missing_ok=True)
    blob.unlink(missing_ok=True)
    raise HubError(f"the Hub index {spec}: {name} does not match its checksum in manifest.json (a corrupt download "
                   "or a changed file); it was removed from the cache: try again, or push the index again")


def _download_images(repo: str, repo_type: str, commit: str, spec: str) -> None:
    """The index's images, and the dataset's other columns (`columns.jsonl`: an image's URL, licence ...) when
    the index was built from a dataset."""
    from huggingface_hub import HfApi

    from interactive_ir.backends.hub import hub_endpoint, hub_token

    try:
        names = [f for f in HfApi(endpoint=hub_endpoint(), token=hub_token()).list_repo_files(
            repo, repo_type=repo_type, revision=commit) if f.startswith("images/") or f == COLUMNS_FILE]
    except Exception as e:  # noqa: BLE001
        _raise_hub(e, f"the Hub index {spec}")
    with ThreadPoolExecutor(DOWNLOAD_THREADS) as pool:
        list(pool.map(lambda n: _download(repo, n, repo_type, commit, spec), names))


def _view_dir(repo_type: str, repo: str, commit: str) -> Path:
    from interactive_ir.backends.hub import hub_cache_dir

    return hub_cache_dir().parent / VIEWS / f"{repo_type}s--{repo.replace('/', '--')}" / commit


def _write_view(view: Path, snapshot: Path, manifest: dict) -> None:
    """Links to the cached index files and a manifest whose image root is the cached images folder."""
    tmp = view.parent / f".{view.name}.tmp-{os.getpid()}"
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir(parents=True)
    for name in manifest["files"]:
        (tmp / name).symlink_to(snapshot / name)
    if (snapshot / COLUMNS_FILE).is_file():
        (tmp / COLUMNS_FILE).symlink_to(snapshot / COLUMNS_FILE)
    images = snapshot / "images"
    images.mkdir(exist_ok=True)
    blobs = Path(os.path.realpath(snapshot.parent.parent / "blobs"))
    (tmp / "manifest.json").write_text(json.dumps({**manifest, "image_root": str(images), "link_roots": [str(blobs)]},
                                                  indent=2))
    (tmp / "complete").write_text("verified against manifest.json\n")
    shutil.rmtree(view, ignore_errors=True)
    tmp.rename(view)


def hub_note(spec: str, error: Exception) -> str:
    kind = "cannot be reached" if isinstance(error, HubUnreachableError) else "could not be loaded"
    return f"the Hub index {spec} {kind}: {error}"
