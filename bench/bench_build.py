"""Index build throughput benchmark (issue 2, "Speed and memory").

For each embedder it measures, in the same run and on the same images:
- `forward`: the embedder's own batched forward throughput on preloaded, already preprocessed
  tensors (`encode_preprocessed`; for embedders without that split, e.g. `fake`, `embed_images` on
  already decoded images) - the ceiling an index build could reach;
- `decode+prep`: decoding (`imageio.open_image`) and preprocessing (`preprocess_images`) alone, one
  thread - the work the builder must hide behind the forward pass;
- `build`: `build_index` end to end (listing, decoding and preprocessing in worker threads overlapped
  with encoding, writing the index folder with checksums), from the call to its return;
- ratio = build / forward, against the goal of 0.9.

Images are N generated "natural-looking" JPEGs (smooth colour fields, a few soft shapes, sensor
noise) written to a temporary folder, or the first N images of a real folder (`--images`, linked,
never copied). No weights are downloaded: open_clip models run with random weights (`:none`), which
cost exactly as much compute as trained ones.

Usage: python bench/bench_build.py [--n 2000] [--embedders open_clip:ViT-B-32:none,fake:512]
"""

from __future__ import annotations

import argparse
import os
import platform
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

BUILD_HEADER = "## Build throughput"
GOAL = 0.9


# --- images ------------------------------------------------------------------------------------
def parse_size(text: str) -> tuple[int, int]:
    w, _, h = text.lower().partition("x")
    return int(w), int(h or w)


def make_images(folder: Path, n: int, size: tuple[int, int], seed: int = 0) -> None:
    """N seeded JPEGs: a bicubic-upsampled coarse colour field, soft ellipses, Gaussian noise."""
    from PIL import Image, ImageDraw, ImageFilter

    folder.mkdir(parents=True, exist_ok=True)
    w, h = size
    for i in range(n):
        rng = np.random.default_rng(seed * 1_000_003 + i)
        cells = int(rng.integers(3, 9))
        coarse = rng.integers(0, 256, (cells, cells, 3), dtype=np.uint8)
        im = Image.fromarray(coarse).resize((w, h), Image.BICUBIC)
        d = ImageDraw.Draw(im)
        for _ in range(int(rng.integers(1, 5))):
            x0, y0 = int(rng.integers(0, w - 8)), int(rng.integers(0, h - 8))
            x1, y1 = x0 + int(rng.integers(8, w // 2)), y0 + int(rng.integers(8, h // 2))
            d.ellipse([x0, y0, x1, y1], fill=tuple(int(c) for c in rng.integers(0, 256, 3)))
        im = im.filter(ImageFilter.GaussianBlur(1.5))
        a = np.asarray(im, np.float32) + rng.normal(0.0, 6.0, (h, w, 3)).astype(np.float32)
        Image.fromarray(np.clip(a, 0, 255).astype(np.uint8)).save(folder / f"img{i:05d}.jpg", quality=90)


def link_images(src: Path, folder: Path, n: int) -> int:
    """Symlink the first N images of a real folder (never copies them); returns how many."""
    from interactive_ir.index.imageio import list_images

    folder.mkdir(parents=True, exist_ok=True)
    files = list_images(src)[:n]
    for p in files:
        (folder / p.name).symlink_to(p.resolve())
    return len(files)


# --- measurements ------------------------------------------------------------------------------
def cpu_seconds() -> float:
    """User + system CPU time of this process, all threads."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def batched(items: list, size: int) -> list[list]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def measure(spec: str, folder: Path, work: Path, batch_size: int, workers: int) -> dict:
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.index.imageio import list_images, open_image

    t = time.perf_counter()
    emb = make_embedder(spec)
    model_s = time.perf_counter() - t
    files = list_images(folder)
    n = len(files)
    split = hasattr(emb, "encode_preprocessed") and hasattr(emb, "preprocess_images")

    # decode + preprocess alone, one thread; the results are the preloaded inputs of the forward pass
    t = time.perf_counter()
    inputs = []
    for chunk in batched(files, batch_size):
        imgs = [open_image(p) for p in chunk]
        inputs.append(emb.preprocess_images(imgs) if split else imgs)
    prep_s = time.perf_counter() - t
    encode = emb.encode_preprocessed if split else emb.embed_images

    encode(inputs[0])  # warm-up (first-call allocations, lazy init), not timed
    t, c = time.perf_counter(), cpu_seconds()
    for x in inputs:
        encode(x)
    forward_s, forward_cpu = time.perf_counter() - t, cpu_seconds() - c
    del inputs

    out = work / ("index-" + "".join(c if c.isalnum() else "_" for c in spec))
    t, c = time.perf_counter(), cpu_seconds()
    report = build_index(BuildConfig(images=folder, out=out, batch_size=batch_size, workers=workers, rebuild=True), emb)
    build_s, build_cpu = time.perf_counter() - t, cpu_seconds() - c
    disk = sum(f.stat().st_size for f in out.iterdir() if f.is_file())
    shutil.rmtree(out, ignore_errors=True)
    if report.count != n:
        raise RuntimeError(f"{spec}: the build indexed {report.count} of {n} images ({report.skipped[:3]})")
    return {
        "spec": spec,
        "n": n,
        "dim": emb.dim,
        "model_s": model_s,
        "forward": n / forward_s,
        "prep": n / prep_s,
        "loop": report.images_per_second,
        "build": n / build_s,
        "forward_cpu_ms": forward_cpu / n * 1e3,
        "build_cpu_ms": build_cpu / n * 1e3,
        "disk_per_img": disk / n,
        "loadavg": os.getloadavg()[0],
    }


def measure_captions(spec: str, folder: Path, captions: Path, work: Path, batch_size: int, workers: int,
                     repeats: int = 1) -> dict:
    """A caption index (text embedder): build_index against the embedder's own encode of the same captions.

    With `repeats` > 1 the two alternate (encode, build, build, encode, ...) and each side's median counts,
    so a drift in the machine's speed during the run does not favour either."""
    from interactive_ir.backends import make_embedder
    from interactive_ir.index.builder import BuildConfig, build_index
    from interactive_ir.index.captions_io import match_captions, read_captions
    from interactive_ir.index.imageio import list_images

    emb = make_embedder(spec, batch_size=batch_size, show_progress=False)  # no progress bars on either side
    files = list_images(folder)
    rels = [p.relative_to(folder).as_posix() for p in files]
    caps, _ = match_captions(read_captions(captions), rels)
    texts = [c for r in rels for c in caps.get(r, [])]
    emb.embed_texts(texts[:batch_size])  # warm-up
    out = work / "caption-index"

    def encode():
        emb.embed_texts(texts)

    def build():
        rep = build_index(BuildConfig(images=folder, out=out, captions=captions, batch_size=batch_size, workers=workers,
                                      rebuild=True, skip_missing_captions=True), emb)
        shutil.rmtree(out, ignore_errors=True)
        return rep

    times: dict[str, list[tuple[float, float]]] = {"encode": [], "build": []}
    indexed = 0
    for i in range(max(1, repeats)):
        for side in (("encode", "build") if i % 2 == 0 else ("build", "encode")):
            t, c = time.perf_counter(), cpu_seconds()
            rep = encode() if side == "encode" else build()
            times[side].append((time.perf_counter() - t, cpu_seconds() - c))
            indexed = rep.count if rep is not None else indexed
    fwd_s, fwd_cpu = (float(np.median([x[j] for x in times["encode"]])) for j in (0, 1))
    bld_s, bld_cpu = (float(np.median([x[j] for x in times["build"]])) for j in (0, 1))
    n = len(files)
    return {"spec": spec, "n": n, "captions": len(texts), "forward": n / fwd_s, "build": n / bld_s,
            "ratio": fwd_s / bld_s, "forward_cpu_ms": fwd_cpu / n * 1e3, "build_cpu_ms": bld_cpu / n * 1e3,
            "ratios": [e[0] / b[0] for e, b in zip(times["encode"], times["build"])],
            "indexed": indexed, "loadavg": os.getloadavg()[0]}


def environment() -> str:
    try:
        import torch

        tv = f"torch {torch.__version__} ({torch.get_num_threads()} intra-op threads)"
    except ImportError:
        tv = "no torch"
    return f"{platform.machine()}, {os.cpu_count()} cores; python {platform.python_version()}, {tv}"


def print_table(results: list[dict], args, what: str) -> None:
    print(f"{BUILD_HEADER} (images/s), {what}, batch {args.batch_size}, {args.workers} workers")
    print("| embedder | dim | N | forward (preloaded tensors) | decode+prep (1 thread) | build loop "
          "| build end to end | ratio build/forward | goal 0.9 | CPU ms/img forward | CPU ms/img build "
          "| disk bytes/img | load avg |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in results:
        ratio = r["build"] / r["forward"]
        print(f"| {r['spec']} | {r['dim']} | {r['n']:,} | {r['forward']:.1f} | {r['prep']:.1f} | {r['loop']:.1f} "
              f"| {r['build']:.1f} | {ratio:.3f} | {'met' if ratio >= GOAL else 'NOT met'} | {r['forward_cpu_ms']:.1f} "
              f"| {r['build_cpu_ms']:.1f} | {r['disk_per_img']:,.0f} "
              f"| {r['loadavg']:.1f} |")


def main(argv: list[str] | None = None) -> int:
    import logging

    logging.basicConfig(level=logging.ERROR)  # open_clip warns that random weights are random
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="images to index")
    ap.add_argument("--image-size", default="224", help="generated image size, W or WxH")
    ap.add_argument("--images", default=None, help="use the first N images of this folder instead of generated ones")
    ap.add_argument("--embedders", default="open_clip:ViT-B-32:none,fake:512", help="comma-separated embedder specs")
    ap.add_argument("--batch-size", type=int, default=32, help="BuildConfig.batch_size, also the forward batch")
    ap.add_argument("--workers", type=int, default=2, help="BuildConfig.workers")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tmp", default=None, help="folder for the temporary images and indices")
    ap.add_argument("--captions", default=None, help="with --images: build caption indices (text embedders in "
                    "--embedders) and compare with the embedder's own encode of the same captions")
    ap.add_argument("--repeats", type=int, default=3, help="with --captions: alternating encode/build passes, "
                    "medians reported")
    args = ap.parse_args(argv)

    print(environment())
    print(f"load average at start: {' '.join(f'{x:.2f}' for x in os.getloadavg())} (other processes share the cores)")
    print(f"command: python bench/bench_build.py {' '.join(argv if argv is not None else sys.argv[1:])}".rstrip())
    t_all = time.perf_counter()
    work = Path(tempfile.mkdtemp(prefix="iir-bench-build-", dir=args.tmp))
    try:
        folder = work / "images"
        if args.images:
            n = link_images(Path(args.images), folder, args.n)
            what = f"first {n:,} images of {args.images}"
        else:
            size = parse_size(args.image_size)
            t = time.perf_counter()
            make_images(folder, args.n, size, args.seed)
            mb = sum(p.stat().st_size for p in folder.iterdir()) / args.n / 1024
            what = f"{args.n:,} generated JPEGs {size[0]}x{size[1]} ({mb:.0f} KB avg)"
            print(f"# generated {args.n} images in {time.perf_counter() - t:.1f}s", file=sys.stderr, flush=True)
        results = []
        if args.captions:
            print("| embedder | images | captions | encode() images/s | caption index build images/s | ratio "
                  "(goal >= 0.9) | ratio per pass | encode CPU ms/img | build CPU ms/img | load avg |")
            print("|---|---|---|---|---|---|---|---|---|---|")
            for spec in [s.strip() for s in args.embedders.split(",") if s.strip()]:
                r = measure_captions(spec, folder, Path(args.captions), work, args.batch_size, args.workers,
                                     args.repeats)
                print(f"| {spec} | {r['n']:,} | {r['captions']:,} | {r['forward']:.0f} | {r['build']:.0f} "
                      f"| {r['ratio']:.2f} | {', '.join(f'{x:.2f}' for x in r['ratios'])} | {r['forward_cpu_ms']:.1f} | {r['build_cpu_ms']:.1f} | {r['loadavg']:.1f} |")
            return 0
        for spec in [s.strip() for s in args.embedders.split(",") if s.strip()]:
            results.append(measure(spec, folder, work, args.batch_size, args.workers))
            print(f"# {spec} done; {time.perf_counter() - t_all:.0f}s so far", file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print()
    print_table(results, args, what)
    print(f"\ntotal {time.perf_counter() - t_all:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
