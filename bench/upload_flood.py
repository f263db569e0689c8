"""Flood Gradio's `/upload` with chunked bodies (no Content-Length) from one address, as issue 40 did, and
measure what the upload guard let in.

    python bench/upload_flood.py                      # the issue's flood: 45 x 19 MB at once, then 25 s
    python bench/upload_flood.py --size-mb 2 --parallel 8 --flood-s 5 --json out.json   # small
    python bench/upload_flood.py --flood-addresses 9     # the second flood from 9 addresses: past the folder's cap

The server is a child process serving a page with one file input through the guard and settings the app
uses (`IIR_UPLOAD_*`, Gradio's `max_file_size` and `delete_cache`); its temp folder is a fresh one. Clients
are threads on this machine, each address a loopback alias (127.0.0.N): one flooder, two other visitors who
upload 1 MB every half second during the flood, and one visitor whose upload, made before the flood, no
event claims (it must survive). A sampler walks the temp folder every 50 ms. Printed: bytes accepted from
the flooder against its quota, the folder's peak against its cap, the other visitors' answers, and whether
the pending upload is still there. `--server-path DIR` serves another checkout's code (a before/after).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOUNDARY = "iirfloodboundary"


def serve(port: int) -> None:
    """The child: a page with a file input, served as the app serves it (guard, size limit, cache deletion)."""
    import gradio as gr
    from starlette.middleware import Middleware

    from interactive_ir.ui.serving.process import trust_proxies
    from interactive_ir.ui.serving.uploads import default_store, delete_cache

    try:
        from interactive_ir.ui.serving.upload_guard import UploadGuard
    except ImportError:  # a checkout from before the guard had a module of its own
        from interactive_ir.ui.serving.uploads import UploadGuard

    trust_proxies("")
    with gr.Blocks(delete_cache=delete_cache()) as demo:
        gr.File(type="filepath")
    demo.launch(server_name="127.0.0.1", server_port=port, prevent_thread_lock=True, quiet=True,
                max_file_size=default_store().policy.max_bytes, app_kwargs={"middleware": [Middleware(UploadGuard)]})
    print("serving", flush=True)
    demo.block_thread()


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def upload(port: int, source: str, size: int, chunk: int = 256 * 1024, timeout: float = 120.0) -> tuple[int, str]:
    """One chunked upload of `size` bytes from `source`: (HTTP status, answer); status 0 when the connection
    broke before an answer could be read."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"files\"; filename=\"f.png\"\r\n"
            f"Content-Type: image/png\r\n\r\n").encode() + uuid.uuid4().bytes  # each upload its own bytes
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    block = b"\0" * chunk

    def body():
        yield head
        left = size - 16
        while left > 0:
            yield block[:min(chunk, left)]
            left -= chunk
        yield tail

    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout, source_address=(source, 0))
    try:
        conn.request("POST", "/gradio_api/upload", body=body(), encode_chunked=True,
                     headers={"Content-Type": f"multipart/form-data; boundary={BOUNDARY}",
                              "Transfer-Encoding": "chunked"})
        r = conn.getresponse()
        return r.status, r.read().decode("utf-8", "replace")[:300]
    except OSError:
        try:
            r = conn.getresponse()  # the server may have answered before it closed the connection
            return r.status, r.read().decode("utf-8", "replace")[:300]
        except (OSError, http.client.HTTPException):
            return 0, "connection closed"
    finally:
        conn.close()


def folder_bytes(folder: Path) -> int:
    total = 0
    for dirpath, _, names in os.walk(folder):
        for n in names:
            try:
                total += os.stat(os.path.join(dirpath, n)).st_size
            except OSError:
                pass
    return total


class Sampler(threading.Thread):
    def __init__(self, folder: Path):
        super().__init__(daemon=True)
        self.folder, self.peak, self.stop = folder, 0, threading.Event()

    def run(self):
        while not self.stop.is_set():
            self.peak = max(self.peak, folder_bytes(self.folder))
            time.sleep(0.05)


def burst(port, source, size, n):
    """`n` uploads at once from `source`: their statuses."""
    out = [None] * n

    def one(i):
        out[i] = upload(port, source, size)[0]

    threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def flood(port, sources, size, parallel, seconds, others, other_size):
    """`parallel` threads uploading from `sources` (in turn) for `seconds`, and each of `others` uploading
    `other_size` every half second meanwhile: (flooders' statuses, other visitors' statuses)."""
    end = time.monotonic() + seconds
    mine, theirs, lock = [], [], threading.Lock()

    def flooder(source):
        while time.monotonic() < end:
            s = upload(port, source, size)[0]
            with lock:
                mine.append(s)

    def visitor(addr):
        while time.monotonic() < end:
            s = upload(port, addr, other_size)[0]
            with lock:
                theirs.append(s)
            time.sleep(0.5)

    threads = [threading.Thread(target=flooder, args=(sources[i % len(sources)],)) for i in range(parallel)]
    threads += [threading.Thread(target=visitor, args=(a,)) for a in others]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return mine, theirs


def run(args) -> dict:
    mb = 2**20
    size, other = int(args.size_mb * mb), int(args.other_mb * mb)
    work = Path(tempfile.mkdtemp(prefix="iir-flood-"))
    folder = work / "gradio"
    port = free_port()
    env = {**os.environ, "GRADIO_TEMP_DIR": str(folder), "PYTHONPATH": str(args.server_path or ROOT),
           "GRADIO_ANALYTICS_ENABLED": "False"}
    child = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(port)], env=env, cwd=str(work),
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        line = child.stdout.readline()
        if "serving" not in line:
            raise SystemExit(f"the server did not start: {line}{child.stdout.read()[-2000:]}")
        threading.Thread(target=child.stdout.read, daemon=True).start()  # keep its log flowing
        status, answer = upload(port, "127.0.0.30", 2 * mb)
        pending = [p for p in json.loads(answer)] if status == 200 else []
        sampler = Sampler(folder)
        sampler.start()
        t0 = time.monotonic()
        statuses = burst(port, "127.0.0.10", size, args.parallel)
        burst_s = time.monotonic() - t0
        sources = [f"127.0.1.{i + 1}" for i in range(args.flood_addresses)]
        mine, theirs = flood(port, sources, size, args.parallel, args.flood_s, ["127.0.0.21", "127.0.0.22"], other)
        sampler.stop.set()
        sampler.join()
        return {
            "size_mb": args.size_mb, "parallel": args.parallel, "flood_s": args.flood_s,
            "flood_addresses": args.flood_addresses,
            "quota_mb": float(os.environ.get("IIR_UPLOAD_PER_CLIENT_BYTES", 100 * mb)) / mb,
            "cap_mb": float(os.environ.get("IIR_UPLOAD_TOTAL_BYTES", 512 * mb)) / mb,
            "burst": {"statuses": dict(Counter(statuses)), "accepted_mb": statuses.count(200) * size / mb,
                      "seconds": round(burst_s, 1)},
            "flood": {"statuses": dict(Counter(mine)), "accepted_mb": mine.count(200) * size / mb},
            "others": dict(Counter(theirs)),
            "folder_peak_mb": round(sampler.peak / mb, 1),
            "pending_upload": "none made" if not pending else ("kept" if all(Path(p).exists() for p in pending)
                                                                else "deleted"),
        }
    finally:
        child.terminate()
        child.wait(10)
        subprocess.run(["rm", "-rf", str(work)], check=False)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    p.add_argument("--size-mb", type=float, default=19.0, help="each flood upload's size (default 19)")
    p.add_argument("--parallel", type=int, default=45, help="uploads at once from the flooding address (default 45)")
    p.add_argument("--flood-s", type=float, default=25.0, help="how long the second flood lasts (default 25 s)")
    p.add_argument("--flood-addresses", type=int, default=1,
                   help="addresses the second flood comes from, in turn (default 1, as in the issue; more fill the cap)")
    p.add_argument("--other-mb", type=float, default=1.0, help="the other visitors' upload size (default 1)")
    p.add_argument("--server-path", help="serve this checkout's interactive_ir (default: this one)")
    p.add_argument("--json", help="also write the figures here")
    args = p.parse_args(argv)
    if args.serve:
        serve(args.serve)
        return 0
    figures = run(args)
    print(json.dumps(figures, indent=1))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
