"""A local image host on 127.0.0.1 for the URL-dataset tests: real HTTP answers, the ways hosts fail.

Routes: /img/NAME.png (a PNG of a colour named in NAME), /img/big.jpg (a 2000x1200 JPEG), /missing.png (404),
/slow.png (answers after `slow_s` seconds), /page.html (text/html), /redirect.png (302 to /img/white.png),
/to-ftp.png (302 to an ftp: URL), /loop.png (302 to itself), /flaky.png (429 with Retry-After: 0 the
first time, then the image), /down.png (503 always), /huge.bin (more bytes than the tests' limit, without a
Content-Length), /claims-huge.png (a Content-Length over the limit). `hits` counts GETs by path.
"""

from __future__ import annotations

import io
import threading
import time
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

COLOURS = {"red": (200, 30, 30), "green": (30, 200, 30), "blue": (30, 30, 200), "yellow": (220, 220, 40),
           "grey": (128, 128, 128), "white": (250, 250, 250)}
HUGE_BYTES = 3_000_000  # what /huge.bin sends (the tests cap responses lower)


def png(colour, size=(32, 24)) -> bytes:
    from PIL import Image

    buf = io.BytesIO()
    Image.new("RGB", size, colour).save(buf, format="PNG")
    return buf.getvalue()


def big_jpeg(size=(2000, 1200)) -> bytes:
    from PIL import Image

    im = Image.linear_gradient("L").resize(size).convert("RGB")
    buf = io.BytesIO()
    im.save(buf, format="JPEG", quality=80)
    return buf.getvalue()


class ImageServer:
    def __init__(self, slow_s: float = 3.0):
        self.slow_s = slow_s
        self.hits: Counter = Counter()
        self.user_agents: set[str] = set()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self.big = big_jpeg()

    def url(self, path: str, host: str = "127.0.0.1", scheme: str = "http") -> str:
        assert self._server is not None
        return f"{scheme}://{host}:{self._server.server_address[1]}{path}"

    def start(self, tls=None) -> ImageServer:
        """Serve on a free port of 127.0.0.1 (`tls`: an `ssl.SSLContext` with a certificate: HTTPS)."""
        host = self

        class Handler(_Handler):
            server_of = host

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


class _Handler(BaseHTTPRequestHandler):
    server_of: ImageServer

    def log_message(self, *args) -> None:
        pass

    def _send(self, code: int, body: bytes = b"", ctype: str = "image/png", headers: dict | None = None,
              length: int | bool | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        if length is not False:
            self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def do_GET(self) -> None:  # noqa: C901 - one branch per route
        host = self.server_of
        path = self.path.split("?")[0]
        with host._lock:
            host.hits[path] += 1
            n = host.hits[path]
            host.user_agents.add(self.headers.get("User-Agent", ""))
        if path.startswith("/img/") and path.endswith(".png") and path[5:-4] in COLOURS:
            return self._send(200, png(COLOURS[path[5:-4]]))
        if path == "/img/big.jpg":
            return self._send(200, host.big, "image/jpeg")
        if path == "/slow.png":
            time.sleep(host.slow_s)
            return self._send(200, png(COLOURS["grey"]))
        if path == "/page.html":
            return self._send(200, b"<html><body>not a picture</body></html>", "text/html; charset=utf-8")
        if path == "/redirect.png":
            return self._send(302, ctype="text/plain", headers={"Location": "/img/white.png"})
        if path == "/to-ftp.png":
            return self._send(302, ctype="text/plain", headers={"Location": "ftp://files.example/x.png"})
        if path == "/loop.png":
            return self._send(302, ctype="text/plain", headers={"Location": "/loop.png"})
        if path == "/flaky.png":
            if n == 1:
                return self._send(429, b"slow down", "text/plain", {"Retry-After": "0"})
            return self._send(200, png(COLOURS["yellow"]))
        if path == "/down.png":
            return self._send(503, b"down", "text/plain")
        if path == "/huge.bin":
            self.close_connection = True
            return self._send(200, b"\0" * HUGE_BYTES, "image/png", length=False)
        if path == "/claims-huge.png":
            return self._send(200, b"", "image/png", length=500_000_000)
        return self._send(404, b"not found", "text/plain")
