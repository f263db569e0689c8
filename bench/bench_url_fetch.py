"""Staging a dataset of image URLs (issue 27): fetch threads against a host with latency, then the cache.

A local HTTP host on 127.0.0.1 serves N distinct JPEGs (640x480), each answer delayed by --latency-ms (a
remote image host's round trip). The rows (a Parquet file: url, caption) are staged with
`dataset_stage.stage_rows` (no embedder: this measures fetching alone) with 1 fetch thread, then with
--workers threads into an empty cache, then again from the cache (a re-run). Prints rows/s of each and
the ratios. Loopback is allowed for this host only through FetchConfig(allow_private=True).

    python bench/bench_url_fetch.py --rows 200 --latency-ms 100 --workers 4
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def jpeg(i: int) -> bytes:
    from PIL import Image

    im = Image.new("RGB", (640, 480), ((i * 37) % 256, (i * 91) % 256, (i * 13) % 256))
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=85)
    return buf.getvalue()


def serve(n: int, latency_s: float) -> ThreadingHTTPServer:
    bodies = [jpeg(i) for i in range(n)]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a):
            pass

        def do_GET(self):
            time.sleep(latency_s)
            body = bodies[int(self.path.strip("/").split(".")[0])]
            self.send_response(200)
            self.send_header("Content-Type", "image/jpeg")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    srv.daemon_threads = True
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def stage(folder: Path, data: Path, cache: Path, workers: int, tag: str) -> tuple[float, object]:
    from interactive_ir.index.dataset_stage import stage_rows
    from interactive_ir.index.hub_dataset import DatasetSource
    from interactive_ir.index.url_fetch import FetchConfig

    cfg = FetchConfig(workers=workers, allow_private=True, cache_dir=str(cache))
    out = folder / tag
    t0 = time.perf_counter()
    rep = stage_rows(DatasetSource(str(data)), out / "images", out / "c.jsonl", out / "cols.jsonl", cfg)
    return time.perf_counter() - t0, rep


def main() -> int:
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=200)
    ap.add_argument("--latency-ms", type=float, default=100.0)
    ap.add_argument("--workers", type=int, default=4)
    args = ap.parse_args()
    srv = serve(args.rows, args.latency_ms / 1000)
    port = srv.server_address[1]
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        (folder / "data").mkdir()
        rows = [{"url": f"http://127.0.0.1:{port}/{i}.jpg", "caption": f"colour {i}"} for i in range(args.rows)]
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "train.parquet")
        one, rep1 = stage(folder, folder / "data", folder / "cache1", 1, "one")
        many, rep = stage(folder, folder / "data", folder / "cache", args.workers, "many")
        cached, rep2 = stage(folder, folder / "data", folder / "cache", args.workers, "cached")
    srv.shutdown()
    assert rep1.images == rep.images == rep2.images == args.rows, (rep1.images, rep.images, rep2.images)
    assert rep2.fetch.fetched == 0 and rep2.fetch.cached == args.rows
    print(f"load average {os.getloadavg()[0]:.2f}; {args.rows} URLs, {args.latency_ms:g} ms latency each")
    print(f"1 thread:             {args.rows / one:8.1f} rows/s ({one:.2f} s)")
    print(f"{args.workers} threads:            {args.rows / many:8.1f} rows/s ({many:.2f} s), "
          f"{one / many:.1f}x one thread")
    print(f"re-run from the cache: {args.rows / cached:8.1f} rows/s ({cached:.2f} s), {many / cached:.1f}x "
          f"the {args.workers}-thread fetch; {rep2.fetch.fetched} fetched")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
