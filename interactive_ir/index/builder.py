"""Building and updating an index from an image folder (and optional captions).

Decoding and preprocessing run in worker threads, overlapped with the model's forward pass.
Unreadable images are skipped and counted. Output is written to a temporary folder and renamed into
place, so an interrupted build never leaves a half-written index that loads.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from interactive_ir import __version__
from interactive_ir.captions_io import match_captions, read_captions
from interactive_ir.errors import BadInputError, IndexBuildError, IndexLoadError
from interactive_ir.imageio import list_images, open_image
from interactive_ir.index.store import FORMAT_VERSION, IndexRecord, load_index, make_faiss_index, sha256_file

log = logging.getLogger(__name__)

ProgressFn = Callable[[int, int, str], None]  # (done, total, message)


@dataclass
class BuildConfig:
    images: Path  # folder of images, searched recursively
    out: Path  # index folder to create or update
    captions: Path | None = None  # optional captions file (JSONL, COCO JSON, CSV/TSV)
    batch_size: int = 32  # images per forward pass
    workers: int = 2  # decoding/preprocessing threads overlapped with encoding
    rebuild: bool = False  # ignore an existing index and embed everything again
    skip_missing_captions: bool = False  # allow captions that name images not in the folder


@dataclass
class BuildReport:
    out: Path  # the index folder written
    count: int  # images in the index
    embedded: int  # images embedded in this run (the rest were reused)
    reused: int  # images carried over from the previous index
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (relative path, reason)
    seconds: float = 0.0  # wall time of the embedding pass
    images_per_second: float = 0.0  # embedded / seconds


def _rel(p: Path, root: Path) -> str:
    return p.relative_to(root).as_posix()


def _load_previous(out: Path, embedder_spec: str, rebuild: bool):
    """The reusable part of an existing index: {id: (record, image_vec, caption_vec)}."""
    if rebuild or not (out / "manifest.json").exists():
        return {}
    try:
        prev = load_index(out, verify=False)
    except IndexLoadError as e:
        log.warning("existing index at %s is unusable (%s); rebuilding it", out, e)
        return {}
    if prev.embedder_spec != embedder_spec:
        raise IndexBuildError(
            f"{out} holds an index built with {prev.embedder_spec}, not {embedder_spec}: pass --rebuild to "
            f"replace it, or choose another --out")
    img = np.asarray(prev.image_vectors, dtype=np.float16)
    cap = None if prev.caption_vectors is None else np.asarray(prev.caption_vectors, dtype=np.float16)
    return {r.id: (r, img[i], None if cap is None else cap[i]) for i, r in enumerate(prev.records)}


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


def build_index(cfg: BuildConfig, embedder, captioner=None, progress: ProgressFn | None = None) -> BuildReport:
    """Build or update the index at `cfg.out`. Returns what was done."""
    check_out(Path(cfg.out))
    root = Path(cfg.images).resolve()
    files = list_images(root)
    if not files:
        raise BadInputError(f"no images (jpg, jpeg, png, webp, gif, bmp) found under {root}")
    rels = [_rel(p, root) for p in files]
    captions: dict[str, list[str]] = {}
    if cfg.captions:
        raw = read_captions(Path(cfg.captions))
        captions, missing = match_captions(raw, rels)
        if missing and not captions:
            raise BadInputError(f"captions file {cfg.captions} names none of the {len(rels)} images under {root} "
                                f"(e.g. {missing[0]!r}): check --images and --captions")
        if missing and not cfg.skip_missing_captions:
            raise BadInputError(f"captions file {cfg.captions} names {len(missing)} images that are not under {root} "
                                f"(e.g. {missing[0]!r}); pass --skip-missing-captions to index the others")
        if missing:
            log.warning("%d captioned images are not in the folder; ignored", len(missing))
    text_only = not embedder.has_vision
    if text_only and not captions and captioner is None:
        raise BadInputError(f"{embedder.spec} is a caption-only embedder: give --captions FILE or --captioner SPEC")

    previous = _load_previous(Path(cfg.out), embedder.spec, cfg.rebuild)
    records: list[IndexRecord] = []
    img_vecs: list[np.ndarray] = []
    cap_vecs: list[np.ndarray | None] = []
    todo: list[tuple[Path, str]] = []
    for p, rel in zip(files, rels):
        st = p.stat()
        old = previous.get(rel)
        caps = captions.get(rel) if cfg.captions else None
        if old and old[0].bytes == st.st_size and old[0].mtime == st.st_mtime and (caps is None or caps == old[0].captions):
            records.append(old[0])
            img_vecs.append(old[1])
            cap_vecs.append(old[2])
        else:
            todo.append((p, rel))
    reused = len(records)

    skipped: list[tuple[str, str]] = []
    t0 = time.perf_counter()
    encode = getattr(embedder, "encode_preprocessed", None) if not text_only else None
    prep = getattr(embedder, "preprocess_images", None) if not text_only else None

    def load_batch(batch):
        ok, imgs = [], []
        for p, rel in batch:
            try:
                im = open_image(p)
            except BadInputError as e:
                skipped.append((rel, str(e)))
                log.warning("skipped %s: %s", rel, e)
                continue
            ok.append((p, rel, im.info.get("original_size", im.size)))
            imgs.append(im)
        pixels = prep(imgs) if (prep and imgs) else None
        return ok, imgs, pixels, len(batch)

    batches = [todo[i : i + cfg.batch_size] for i in range(0, len(todo), cfg.batch_size)]
    new_img: list[np.ndarray] = []
    new_cap: list[np.ndarray | None] = []
    new_rec: list[IndexRecord] = []
    bar = _bar(len(todo), f"indexing {root.name}")
    done = 0
    with ThreadPoolExecutor(max_workers=max(1, cfg.workers)) as pool:
        pending = [pool.submit(load_batch, b) for b in batches[: cfg.workers + 1]]
        next_i = len(pending)
        while pending:
            ok, imgs, pixels, n_in_batch = pending.pop(0).result()
            if next_i < len(batches):
                pending.append(pool.submit(load_batch, batches[next_i]))
                next_i += 1
            done += n_in_batch
            if ok:
                need = [i for i, (_, rel, _) in enumerate(ok) if not captions.get(rel)]
                generated = captioner.caption([imgs[i] for i in need]) if (captioner and need) else []
                gen = dict(zip(need, generated))
                caps_list = [list(captions.get(rel) or ([gen[i]] if gen.get(i) else [])) for i, (_, rel, _) in enumerate(ok)]
                keep = [i for i, c in enumerate(caps_list) if c or not text_only]
                skipped.extend((ok[i][1], "no caption (a caption index needs one per image)")
                               for i in range(len(ok)) if i not in set(keep))
                cvec = _caption_vectors(embedder, [caps_list[i] for i in keep])
                if text_only:
                    ivec = cvec
                elif encode is not None and pixels is not None:
                    ivec = encode(pixels)[keep]
                else:
                    ivec = embedder.embed_images(imgs)[keep]
                for j, i in enumerate(keep):
                    p, rel, (w, h) = ok[i]
                    st = p.stat()
                    new_rec.append(IndexRecord(rel, caps_list[i], w, h, st.st_size, st.st_mtime))
                    new_img.append(ivec[j].astype(np.float16))
                    new_cap.append(None if text_only or cvec[j] is None else cvec[j].astype(np.float16))
            bar.update(n_in_batch)
            if progress:
                progress(done, len(todo), f"embedded {done}/{len(todo)} images")
    bar.close()
    seconds = time.perf_counter() - t0
    records += new_rec
    img_vecs += new_img
    cap_vecs += new_cap
    if not records:
        raise IndexBuildError(f"none of the {len(files)} images under {root} could be indexed "
                              f"(first problem: {skipped[0][1] if skipped else 'unknown'})")
    order = sorted(range(len(records)), key=lambda i: records[i].id)
    records = [records[i] for i in order]
    image_mat = np.stack([img_vecs[i] for i in order]).astype(np.float16)
    has_caps = (not text_only) and any(c is not None for c in cap_vecs)
    cap_mat = None
    if has_caps:
        zero = np.zeros(embedder.dim, np.float16)
        cap_mat = np.stack([cap_vecs[i] if cap_vecs[i] is not None else zero for i in order]).astype(np.float16)
    captions_src = str(Path(cfg.captions).resolve()) if cfg.captions else None
    _write(Path(cfg.out), root, embedder, records, image_mat, cap_mat, len(skipped), captions_src)
    embedded = len(new_rec)
    return BuildReport(Path(cfg.out), len(records), embedded, reused, skipped, seconds,
                       embedded / seconds if seconds > 0 else 0.0)


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


def _write(out: Path, root: Path, embedder, records, image_mat, cap_mat, skipped: int,
           captions_src: str | None = None) -> None:
    out = out.resolve()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    tmp.chmod(0o755)  # mkdtemp makes it 0700: give the index the usual folder permissions (os.umask would
    #                   change process-wide state under the app's threads)
    try:
        np.save(tmp / "image_emb.npy", image_mat)
        if cap_mat is not None:
            np.save(tmp / "caption_emb.npy", cap_mat)
        import faiss

        faiss.write_index(make_faiss_index(image_mat, cap_mat), str(tmp / "faiss.index"))
        with open(tmp / "metadata.jsonl", "w", encoding="utf-8") as fh:
            for r in records:
                fh.write(json.dumps(r.__dict__, ensure_ascii=False) + "\n")
        files = {}
        for name in ("image_emb.npy", "caption_emb.npy", "faiss.index", "metadata.jsonl"):
            f = tmp / name
            if f.exists():
                files[name] = {"bytes": f.stat().st_size, "sha256": sha256_file(f)}
        try:
            image_root = os.path.relpath(root, out)
        except ValueError:  # another drive on Windows
            image_root = str(root)
        now = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
        manifest = {
            "format_version": FORMAT_VERSION,
            "embedder": embedder.spec,
            "dim": int(image_mat.shape[1]),
            "has_vision": bool(embedder.has_vision),
            "caption_vectors": cap_mat is not None,
            "count": len(records),
            "skipped": skipped,
            "image_root": image_root,
            "captions_file": captions_src,  # absolute path of --captions (for the rebuild command), or None
            "created": now,
            "package_version": __version__,
            "files": files,
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2))
        old = None
        if out.exists():
            old = out.parent / f".{out.name}.old-{os.getpid()}-{time.time_ns()}"
            out.rename(old)
        tmp.rename(out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _bar(total: int, desc: str):
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit="img", disable=None, leave=False)
