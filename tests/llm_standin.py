"""A local OpenAI-compatible chat server on 127.0.0.1 that records each request's Authorization header and
refuses some tokens with HTTP 401, as the Hugging Face router does for an expired or revoked one. Replies
are the fake LLM's (`fake_reply`), so the app's parsers get text they can read."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from interactive_ir.backends.llms import fake_reply


class StandInLLM:
    """`start()` returns the base URL (…/v1); `auths` lists each request's Authorization header."""

    def __init__(self, refused: tuple[str, ...] = ()):
        self.refused = set(refused)  # tokens answered with 401
        self.auths: list[str] = []
        self._server: ThreadingHTTPServer | None = None

    def start(self) -> str:
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:
                pass

            def do_GET(self) -> None:  # the start-up probe's model list
                self._send(200, {"object": "list", "data": [{"id": "org/model", "object": "model"}]})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                auth = self.headers.get("Authorization", "")
                outer.auths.append(auth)
                if auth.removeprefix("Bearer ") in outer.refused:
                    return self._send(401, {"error": {"message": "Invalid credentials in Authorization header"}})
                text = fake_reply(str(body["messages"][-1]["content"]))
                self._send(200, {"id": "c1", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
                                 "choices": [{"index": 0, "finish_reason": "stop",
                                              "message": {"role": "assistant", "content": text}}]})

            def _send(self, code: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
