"""Building and updating an index from an image folder (and optional captions).

Decoding and preprocessing run in worker threads, overlapped with the model's forward pass.
Unreadable images are skipped and counted. Rows stream to disk in id order (`writer.IndexWriter`): a build
holds one batch of vectors in RAM, never the collection. Output is written to a temporary folder and
renamed into place, so an interrupted build never leaves a half-written index that loads. A caption
index (text embedder with captions) reads only each image's header, never its pixels.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from interactive_ir.errors import BadInputError, IndexBuildError, IndexLoadError
from interactive_ir.index import kinds
from interactive_ir.index.build_sizes import sizes_for
from interactive_ir.index.captions_io import match_captions, read_captions
from interactive_ir.index.imageio import image_size, list_images, open_image
from interactive_ir.index.metadata import IndexRecord
from interactive_ir.index.photo_info import PhotoInfo, read_photo_info, read_user_fields
from interactive_ir.index.store import load_index
from interactive_ir.index.writer import IndexWriter

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, str], None]  # (done, total, message)


@dataclass
class BuildConfig:
    images: Path  # folder of images, searched recursively
    out: Path  # index folder to create or update
    captions: Path | None = None  # optional captions file (JSONL, COCO JSON, CSV/TSV)
    batch_size: int = 0  # images per forward pass; 0 = IIR_BUILD_BATCH_SIZE, else from the device (build_sizes)
    workers: int = 0  # decoding/preprocessing threads overlapped with encoding; 0 = IIR_BUILD_WORKERS, else from the device
    rebuild: bool = False  # ignore an existing index and embed everything again
    skip_missing_captions: bool = False  # allow captions that name images not in the folder
    kind: str = "auto"  # exact, ivf-pq, hnsw, or auto (exact up to kinds.AUTO_EXACT_MAX images)
    image_list: Path | None = None  # optional text file, one image path per line relative to `images`: index only those


@dataclass
class BuildReport:
    out: Path  # the index folder written
    count: int  # images in the index
    embedded: int  # images embedded in this run (the rest were reused)
    reused: int  # images carried over from the previous index
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, reason)
    seconds: float = 0.0  # wall time of the embedding pass
    images_per_second: float = 0.0  # embedded / seconds
    batch_size: int = 0  # images per forward pass it used
    workers: int = 0  # decoding threads it used


def _rel(p: Path, root: Path) -> str:
    return p.relative_to(root).as_posix()


def _load_previous(out: Path, embedder_spec: str, rebuild: bool):
    """The existing index at `out` (its rows are reused when a file is unchanged), or None."""
    if rebuild or not (out / "manifest.json").exists():
        return None
    try:
        prev = load_index(out, verify=False)
    except IndexLoadError as e:
        log.warning("existing index at %s is unusable (%s); rebuilding it", out, e)
        return None
    if prev.embedder_spec != embedder_spec:
        raise IndexBuildError(
            f"{out} holds an index built with {prev.embedder_spec}, not {embedder_spec}: pass --rebuild to "
            f"replace it, or choose another --out")
    return prev


def check_out(out: Path) -> None:
    """Refuse an --out that holds anything but an index: a build replaces the folder at `out` whole."""
    out = Path(out)
    if out.is_file() or (out.exists() and not out.is_dir()):
        raise BadInputError(f"--out {out} is a file, not a folder: choose a new folder for the index")
    if out.is_dir() and not (out / "manifest.json").is_file():
        n = sum(1 for _ in out.iterdir())
        if n:
            raise BadInputError(f"--out {out} is a folder of {n} other files, not an index: building would replace "
                                "it, so choose a new or empty folder (for example indices/NAME)")


MAX_LINK_ROOTS = 1000  # distinct folders that indexed links may point into (recorded in the manifest)
TEXT_GROUP = 512  # caption-only builds: images whose captions go to one encode() call (sorted by length there)
PROGRESS_STEPS = 8  # caption-only builds: at least this many groups, so progress is reported during the build


def _link_root(p: Path, root: Path) -> str | None:
    """The folder a link out of the image root points into, or None for a file inside the root."""
    real = os.path.realpath(p)
    if real.startswith(str(root).rstrip("/") + "/"):
        return None
    return os.path.dirname(real)


def read_image_list(path: Path, root: Path) -> list[Path]:
    """The files named in `path` (one per line, relative to `root`; blank lines and # comments ignored).

    Every named file must exist under `root`: otherwise one error naming the first few that do not.
    """
    if not path.is_file():
        raise BadInputError(f"--image-list {path} does not exist: give a text file with one image path per line")
    if not root.is_dir():
        raise BadInputError(f"image folder {root} does not exist: pass an existing folder with --images")
    names: list[str] = []
    seen: set[str] = set()
    for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
        name = line.strip()
        if name and not name.startswith("#") and name not in seen:
            seen.add(name)
            names.append(name)
    if not names:
        raise BadInputError(f"--image-list {path} names no images: write one path per line, relative to --images")
    files, missing = [], []
    for name in names:
        p = root / name
        if os.path.abspath(p).startswith(str(root).rstrip("/") + "/") and p.is_file():
            files.append(p)
        else:
            missing.append(name)
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3]) + (f" and {len(missing) - 3} more" if len(missing) > 3 else "")
        raise BadInputError(f"--image-list {path} names {len(missing)} of {len(names)} files not found under {root}: "
                            f"{shown}; fix the list or --images")
    return files


def build_index(cfg: BuildConfig, embedder, captioner=None, progress: ProgressFn | None = None) -> BuildReport:
    """Build or update the index at `cfg.out`, streaming rows to disk in id order. Returns what was done.

    The stages: the image files in id order, their given captions, the checks, then batches read by a
    thread pool (`_BatchReader`) and embedded and written here in order (`_write_batch`), then the manifest."""
    check_out(Path(cfg.out))
    root, files, rels = _image_files(cfg)
    captions = _given_captions(cfg, rels, root)
    fields = _given_fields(cfg, rels)
    text_only = not embedder.has_vision
    if text_only and not captions and captioner is None:
        raise BadInputError(f"{embedder.spec} is a caption-only embedder: give --captions FILE or --captioner SPEC")
    kinds.choose_params(cfg.kind, max(len(files), kinds.MIN_APPROX_ROWS), embedder.dim)  # an unknown kind fails now
    if cfg.kind in ("ivf-pq", "hnsw") and len(files) < kinds.MIN_APPROX_ROWS:
        kinds.choose_params(cfg.kind, len(files), embedder.dim)  # the one-line "use --kind exact" error, before any work

    batch_size, workers = sizes_for(embedder, cfg.batch_size, cfg.workers)  # 0: IIR_BUILD_*, else the device's
    cfg = dataclasses.replace(cfg, batch_size=batch_size, workers=workers)
    previous = _load_previous(Path(cfg.out), embedder.spec, cfg.rebuild)
    with_caps = not text_only and bool(captions or captioner is not None or (previous and previous.has_captions))
    reader = _BatchReader(cfg, root, embedder, captioner, captions, previous, fields)
    pairs = list(zip(files, rels))
    # caption-only rows: many images' captions per encode() call, which sorts them by length before its own
    # forward batches of --batch-size (less padding than a call per 32 images); images: a forward pass per batch
    # (at most TEXT_GROUP, and small enough for PROGRESS_STEPS progress reports: the demo's 320 are 8 groups of 40)
    group = max(cfg.batch_size, min(TEXT_GROUP, -(-len(pairs) // PROGRESS_STEPS))) if not reader.decode \
        else cfg.batch_size
    batches = [pairs[i : i + group] for i in range(0, len(pairs), group)]
    writer = IndexWriter(Path(cfg.out), embedder.dim, caption_vectors=with_caps)
    t0 = time.perf_counter()
    try:
        embedded, reused = _embed_batches(cfg, batches, reader, writer, f"indexing {root.name}", progress)
        seconds = time.perf_counter() - t0
        skipped = reader.skipped
        if writer.rows == 0:
            raise IndexBuildError(f"none of the {len(files)} images under {root} could be indexed "
                                  f"(first problem: {skipped[0][1] if skipped else 'no readable image'})")
        _finish(writer, cfg, root, embedder, skipped, reader.link_roots)
    except BaseException:
        writer.abort(keep_partial=False)
        raise
    return BuildReport(Path(cfg.out), writer.rows, embedded, reused, reader.skipped, seconds,
                       embedded / seconds if seconds > 0 else 0.0, batch_size, workers)


def _image_files(cfg: BuildConfig) -> tuple[Path, list[Path], list[str]]:
    """(the image folder, its image files, their ids), in id order."""
    root = Path(cfg.images).resolve()
    if root == Path(root.anchor):
        raise BadInputError(f"--images {root} is the whole file system: point it at the folder of images")
    files = read_image_list(Path(cfg.image_list), root) if cfg.image_list else list_images(root)
    if not files:
        raise BadInputError(f"no images (jpg, jpeg, png, webp, gif, bmp) found under {root}")
    rels = [_rel(p, root) for p in files]
    order = sorted(range(len(rels)), key=lambda i: rels[i])
    return root, [files[i] for i in order], [rels[i] for i in order]


def _given_fields(cfg: BuildConfig, rels: list[str]) -> dict[str, dict[str, list[str]]]:
    """The metadata file's user fields (tags, album, person, ...) by image id; {} without a JSONL/JSON file."""
    if not cfg.captions:
        return {}
    raw = read_user_fields(Path(cfg.captions))
    by_rel, _ = match_captions({k: [k] for k in raw}, rels)  # the captions' key matching, on the keys alone
    return {rel: raw[keys[0]] for rel, keys in by_rel.items()}


def _given_captions(cfg: BuildConfig, rels: list[str], root: Path) -> dict[str, list[str]]:
    """The captions file's captions by image id ({} without one); refused when it names the wrong images."""
    captions: dict[str, list[str]] = {}
    if cfg.captions:
        raw = read_captions(Path(cfg.captions))
        captions, missing = match_captions(raw, rels)
        if missing and not captions:
            raise BadInputError(f"captions file {cfg.captions} names none of the {len(rels)} images under {root} "
                                f"(e.g. {missing[0]!r}): check --images and --captions")
        if missing and not (cfg.skip_missing_captions or cfg.image_list):  # a subset: other captions are expected
            raise BadInputError(f"captions file {cfg.captions} names {len(missing)} images that are not under {root} "
                                f"(e.g. {missing[0]!r}); pass --skip-missing-captions to index the others")
        if missing:
            log.warning("%d captioned images are not in the folder; ignored", len(missing))
    return captions


class _BatchReader:
    """Reads one batch of files (called from the build's thread pool): the rows an earlier build can give
    again, the new files' images (or only their sizes, for caption-only rows) and their preprocessed pixels.
    Collects what it skipped and the folders that indexed links point into."""

    def __init__(self, cfg: BuildConfig, root: Path, embedder, captioner, captions: dict, previous,
                 fields: dict | None = None):
        self.cfg, self.root, self.captions, self.previous = cfg, root, captions, previous
        self.fields = fields or {}
        self.infos: dict[str, PhotoInfo] = {}  # rel -> EXIF and fields read in the pool, taken by _write_batch
        self.embedder, self.captioner = embedder, captioner
        self.text_only = not embedder.has_vision
        self.skipped: list[tuple[str, str]] = []
        self.link_roots: set[str] = set()
        # caption-only rows need no pixels: only the image header is read (its size), never a decode
        self.decode = not self.text_only or captioner is not None
        self.encode = getattr(embedder, "encode_preprocessed", None) if not self.text_only else None
        self.prep = getattr(embedder, "preprocess_images", None) if not self.text_only else None

    def reusable(self, p: Path, rel: str):
        """(row, record) of the earlier build when the file and its captions did not change, else None."""
        if self.previous is None:
            return None
        row = self.previous.row_of.get(rel)
        if row is None:
            return None
        old = self.previous.records[row]
        st = p.stat()
        caps = self.captions.get(rel) if self.cfg.captions else None
        if old.bytes == st.st_size and old.mtime == st.st_mtime and (caps is None or caps == old.captions):
            return row, old
        return None

    def _linked(self, lr: str | None) -> None:
        """An accepted file is a link into `lr`: that folder is served (recorded in the manifest). A link the build
        skipped (not an image, unreadable) adds no folder (issue 40: a skipped link to /etc/passwd added /etc)."""
        if lr is not None:
            self.link_roots.add(lr)

    def __call__(self, batch):
        """(p, rel, reused (row, record) or None, image or None, (w, h)) per readable file; pixels."""
        items, imgs = [], []
        for p, rel in batch:
            lr = _link_root(p, self.root)
            if lr is not None:
                if lr == "/" or (lr not in self.link_roots and len(self.link_roots) >= MAX_LINK_ROOTS):
                    self.skipped.append((rel, f"a link into {lr}: copy the file into the image folder"))
                    continue
            old = self.reusable(p, rel)
            try:
                self.infos[rel] = read_photo_info(p, rel, p.stat().st_mtime, self.fields.get(rel))  # header only
            except OSError:
                pass  # the file vanished: reported below when it is read
            if old is not None:
                items.append((p, rel, old, None, (old[1].width, old[1].height)))
                self._linked(lr)
                continue
            try:
                if self.decode:
                    im = open_image(p)
                    size = im.info.get("original_size", im.size)
                else:
                    im, size = None, image_size(p)
            except (BadInputError, OSError, SyntaxError) as e:
                why = str(e) if isinstance(e, BadInputError) else f"not a readable image ({e})"
                self.skipped.append((rel, why))
                log.warning("skipped %s: %s", rel, why)
                continue
            items.append((p, rel, None, im, size))
            self._linked(lr)
            if im is not None and not self.text_only:
                imgs.append(im)
        pixels = self.prep(imgs) if (self.prep and imgs) else None
        return items, imgs, pixels, len(batch)


def _embed_batches(cfg: BuildConfig, batches: list, reader: _BatchReader, writer, desc: str,
                   progress: ProgressFn | None) -> tuple[int, int]:
    """Read batches ahead on `cfg.workers` threads, embed and write them in order. (embedded, reused)."""
    total = sum(len(b) for b in batches)
    embedded = reused = done = 0
    bar = _bar(total, desc)
    with ThreadPoolExecutor(max_workers=max(1, cfg.workers)) as pool:
        pending = [pool.submit(reader, b) for b in batches[: cfg.workers + 1]]
        next_i = len(pending)
        while pending:
            items, imgs, pixels, n_in_batch = pending.pop(0).result()
            if next_i < len(batches):
                pending.append(pool.submit(reader, batches[next_i]))
                next_i += 1
            done += n_in_batch
            e, r = _write_batch(writer, items, imgs, pixels, reader.embedder, reader.captioner, reader.captions,
                                reader.text_only, reader.encode, reader.previous, reader.skipped, reader.infos)
            embedded, reused = embedded + e, reused + r
            bar.update(n_in_batch)
            if progress:
                progress(done, total, f"embedded {done}/{total} images")
    bar.close()
    return embedded, reused


def _finish(writer, cfg: BuildConfig, root: Path, embedder, skipped: list, link_roots: set[str]) -> None:
    """Write the manifest: what built the index and from where."""
    try:
        image_root = os.path.relpath(root, Path(cfg.out).resolve())
    except ValueError:  # another drive on Windows
        image_root = str(root)
    writer.finish(cfg.kind, {
        "embedder": embedder.spec,
        "has_vision": bool(embedder.has_vision),
        "skipped": len(skipped),
        "image_root": image_root,
        "captions_file": str(Path(cfg.captions).resolve()) if cfg.captions else None,  # for the rebuild command
        "link_roots": sorted(link_roots),  # folders indexed links point into (the loader refuses others)
    })


def _write_batch(writer, items, imgs, pixels, embedder, captioner, captions, text_only, encode, previous,
                 skipped, infos: dict | None = None) -> tuple[int, int]:
    """Embed a batch's new files and append every row (reused or new) in id order. (embedded, reused)."""
    new = [i for i, it in enumerate(items) if it[2] is None]
    need = [i for i in new if not captions.get(items[i][1])]
    generated = captioner.caption([items[i][3] for i in need]) if (captioner and need) else []
    gen = dict(zip(need, generated))
    caps_of = {i: list(captions.get(items[i][1]) or ([gen[i]] if gen.get(i) else [])) for i in new}
    keep_new = [i for i in new if caps_of[i] or not text_only]
    for i in new:
        if i not in set(keep_new):
            skipped.append((items[i][1], "no caption (a caption index needs one per image)"))
    cvec = dict(zip(keep_new, _caption_vectors(embedder, [caps_of[i] for i in keep_new])))
    ivec: dict[int, np.ndarray] = {}
    if keep_new:
        if text_only:
            ivec = cvec
        else:
            pos = {i: j for j, i in enumerate(i for i in new)}  # imgs/pixels follow the order of the new items
            rows = encode(pixels) if (encode is not None and pixels is not None) else embedder.embed_images(imgs)
            ivec = {i: rows[pos[i]] for i in keep_new}
    recs, iv, cv = [], [], []
    zero = np.zeros(embedder.dim, np.float16)
    kept = set(keep_new)
    reused = 0
    for i, (p, rel, old, _im, (w, h)) in enumerate(items):
        if old is not None:
            row, rec = old
            recs.append(IndexRecord(rec.id, rec.captions, rec.width, rec.height, rec.bytes, rec.mtime,
                                    (infos or {}).pop(rel, None)))  # EXIF read again: kept across updates
            iv.append(np.asarray(previous.image_vectors[row], np.float16))
            pc = previous.caption_vectors
            cv.append(np.asarray(pc[row], np.float16) if pc is not None else zero)
            reused += 1
        elif i in kept:
            st = p.stat()
            recs.append(IndexRecord(rel, caps_of[i], w, h, st.st_size, st.st_mtime, (infos or {}).pop(rel, None)))
            iv.append(np.asarray(ivec[i], np.float16))
            cv.append(zero if text_only or cvec[i] is None else np.asarray(cvec[i], np.float16))
    if recs:
        writer.add(recs, np.stack(iv), np.stack(cv) if writer.captions is not None else None)
    return len(kept), reused


def _caption_vectors(embedder, caps_list: list[list[str]]) -> list[np.ndarray | None]:
    """Mean of each image's caption vectors, renormalised; None for images without captions."""
    flat = [c for caps in caps_list for c in caps]
    if not flat:
        return [None] * len(caps_list)
    vecs = embedder.embed_texts(flat)
    out: list[np.ndarray | None] = []
    i = 0
    for caps in caps_list:
        if not caps:
            out.append(None)
            continue
        v = vecs[i : i + len(caps)].mean(axis=0)
        out.append((v / (np.linalg.norm(v) or 1.0)).astype(np.float32))
        i += len(caps)
    return out


def _bar(total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="img", disable=None, leave=False)


def _write(out: Path, root: Path, embedder, records, image_mat, cap_mat, skipped: int,
           captions_src: str | None = None, kind: str = "exact") -> None:
    """Write whole arrays as an index (benchmarks' synthetic collections), through the streaming writer."""
    out = Path(out).resolve()
    w = IndexWriter(out, int(image_mat.shape[1]), caption_vectors=cap_mat is not None)
    try:
        for a in range(0, len(records), 65_536):
            b = a + 65_536
            w.add(records[a:b], image_mat[a:b], None if cap_mat is None else cap_mat[a:b])
        try:
            image_root = os.path.relpath(Path(root).resolve(), out)
        except ValueError:
            image_root = str(root)
        w.finish(kind, {"embedder": embedder.spec, "has_vision": bool(embedder.has_vision), "skipped": skipped,
                        "image_root": image_root, "captions_file": captions_src})
    except BaseException:
        w.abort(keep_partial=False)
        raise
