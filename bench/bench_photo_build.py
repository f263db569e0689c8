"""The photo demo's background build, timed as the app runs it (issue 25 D4).

Writes N photos into a local folder of Parquet shards in the DOCCI mirror's layout (`image` {bytes, path},
`example_id`, `description`) twice: at Flickr8k's own size (about 500x375, the size bench_build.py's figures
were measured on) and upscaled to DOCCI's size (`--long-side`, default 2048 px, JPEG quality 92, about half a
megabyte each as the mirror's ~500 MB per ~960 photos says). Then runs the build's child process
(`python -m interactive_ir.ui.photos.child`, what the app starts at nice 10; here at nice 0) on each, and on
the small ones once more without descriptions (images only, as bench_build.py measured), interleaved in the
same run. It reports the CPU time a photo costs (user + system of the child, all threads: a build of N photos
less one of 8, so imports and the embedder's load drop out; CPU time is far steadier than wall time on a
shared machine) and two ratios: what embedding each description adds, and what DOCCI's larger files add, to
scale bench_build.py's figure into the photo demo's computed first-start time. Wall times are listed too.

Usage: python bench/bench_photo_build.py [--n 96] [--embedder open_clip:ViT-B-32:none] [--images DIR]
(open_clip `:none`: random weights, the same compute, nothing downloaded.)
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FLICKR = ROOT.parent / "shared" / "data" / "flickr8k" / "images"


def shards(folder: Path, sources: list[Path], long_side: int, per_shard: int = 32) -> int:
    """Parquet shards of `sources` (resized so the longer side is `long_side`, 0 = as they are); total bytes
    of the JPEGs written."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    from PIL import Image

    folder.mkdir(parents=True)
    rows, total = [], 0
    for i, src in enumerate(sources):
        with Image.open(src) as im:
            im = im.convert("RGB")
            if long_side:
                scale = long_side / max(im.size)
                im = im.resize((round(im.width * scale), round(im.height * scale)), Image.Resampling.BICUBIC)
            buf = io.BytesIO()
            im.save(buf, format="JPEG", quality=92)
        data = buf.getvalue()
        total += len(data)
        rows.append({"image": {"bytes": data, "path": src.name}, "example_id": f"train_{i:05d}",
                     "description": f"A photo number {i}. It shows a scene. Nothing else is known about it here."})
    for s in range(0, len(rows), per_shard):
        name = f"train-{s // per_shard:05d}-of-{-(-len(rows) // per_shard):05d}.parquet"
        pq.write_table(pa.Table.from_pylist(rows[s:s + per_shard]), folder / name)
    return total


def run_child(folder: Path, out: Path, embedder: str, n: int, captions: bool = True) -> tuple[float, float]:
    """(wall seconds from the child's first line, the embedder loaded, to "done"; CPU seconds of the whole
    child, user + system, all threads) for building the index of `folder`'s first `n` photos into `out`."""
    caption = ["--caption-column", "description"] if captions else []  # without: no caption column is found
    proc = subprocess.Popen([sys.executable, "-m", "interactive_ir.ui.photos.child", "--out", str(out), "--embedder",
                             embedder, "--dataset", str(folder), *caption, "--id-column", "example_id", "--limit",
                             str(n)], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    start = end = None
    for line in proc.stdout:
        if line.startswith("iir-photos phase"):
            start = time.perf_counter()
        elif line.startswith(f"iir-photos done {n}"):
            end = time.perf_counter()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0 or start is None or end is None:
        raise SystemExit(f"the build of {folder} failed (exit status {proc.returncode})")
    return end - start, usage.ru_utime + usage.ru_stime


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=96)
    p.add_argument("--embedder", default="open_clip:ViT-B-32:none")
    p.add_argument("--images", type=Path, default=FLICKR, help="photos to start from (default: Flickr8k)")
    p.add_argument("--long-side", type=int, default=2048, help="the large photos' longer side in pixels")
    p.add_argument("--repeat", type=int, default=3, help="runs of each size, interleaved (the median is reported)")
    args = p.parse_args()
    sources = sorted(args.images.glob("*.jpg"))[: args.n]
    if len(sources) < args.n:
        raise SystemExit(f"{args.images} holds {len(sources)} JPEGs, fewer than --n {args.n}")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        small, large = "as they are (~500x375)", f"longer side {args.long_side} px"
        cases = {"bare": (0, False, small), "small": (0, True, small), "large": (args.long_side, True, large)}
        mb = {side: shards(tmp / f"data-{side}", sources, side) / 1e6 for side in (0, args.long_side)}
        few = 8  # a short build: the child's fixed CPU cost (imports, the embedder's load), subtracted
        wall: dict[str, list[float]] = {case: [] for case in cases}
        cpu: dict[str, list[float]] = {case: [] for case in cases}
        for r in range(args.repeat):  # interleaved: a load change hits every case alike
            for case, (side, caps, _) in cases.items():
                w, c = run_child(tmp / f"data-{side}", tmp / f"index-{case}-{r}", args.embedder, args.n, caps)
                _, c0 = run_child(tmp / f"data-{side}", tmp / f"few-{case}-{r}", args.embedder, few, caps)
                wall[case].append(w)
                cpu[case].append(1000 * (c - c0) / (args.n - few))

        def median(v: list[float]) -> float:
            return sorted(v)[len(v) // 2]

        print("| photos | size | descriptions | MB of JPEG | CPU ms a photo, runs | median | wall s, runs | load avg |")
        print("|---|---|---|---|---|---|---|---|")
        for case, (side, caps, label) in cases.items():
            runs = ", ".join(f"{x:.0f}" for x in cpu[case])
            walls = ", ".join(f"{x:.1f}" for x in wall[case])
            print(f"| {args.n} | {label} | {'yes' if caps else 'no'} | {mb[side]:.1f} | {runs} | {median(cpu[case]):.0f} "
                  f"| {walls} | {os.getloadavg()[0]:.1f} |")
        m = {case: median(v) for case, v in cpu.items()}
        print(f"\nCPU a photo, descriptions embedded too / images only (small photos): {m['small'] / m['bare']:.2f}")
        print(f"CPU a photo, large / small photos (both with descriptions): {m['large'] / m['small']:.2f}")
        print(f"({args.embedder}; {args.repeat} interleaved runs of each case; CPU: a {args.n}-photo build less an "
              f"{few}-photo one, over the {args.n - few} photos between)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
