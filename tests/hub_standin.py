"""A local stand-in for the Hugging Face Hub on 127.0.0.1, speaking the Hub's real HTTP API for what
huggingface_hub's clients call here: the tree listing, `resolve` (HEAD and GET), repo creation, YAML
validation, preupload (every file "regular") and NDJSON commits. Private repos answer 401 RepoNotFound
without a token, as the Hub does. Tests point HF_ENDPOINT at it; no library function is replaced.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote, urlparse


@dataclass
class Repo:
    private: bool = False
    files: dict[str, bytes] = field(default_factory=dict)
    sha: str = "0" * 40
    served: dict[str, bytes] = field(default_factory=dict)  # bytes served in place of the stored ones (corruption)
    slow_s: float = 0.0  # each file's download waits this long first (a slow network: a download seen in progress)


class StandInHub:
    """`repos[(type, "owner/name")]`; `start()` returns the endpoint URL; `requests` logs (method, path)."""

    def __init__(self, token: str = "hf_standin_token"):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.token = token
        self.user = "standin-user"  # the account /api/whoami-v2 names for `token`
        self.requests: list[tuple[str, str]] = []
        self._server: ThreadingHTTPServer | None = None

    def add_repo(self, repo_type: str, repo_id: str, files: dict[str, bytes], private: bool = False) -> Repo:
        repo = Repo(private=private, files=dict(files))
        repo.sha = hashlib.sha1(repr(sorted((k, hashlib.sha1(v).hexdigest()) for k, v in files.items())).encode()).hexdigest()
        self.repos[(repo_type, repo_id)] = repo
        return repo

    def start(self) -> str:
        hub = self

        class Handler(_Handler):
            standin = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None


def _oid(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


class _Handler(BaseHTTPRequestHandler):
    standin: StandInHub

    def log_message(self, *args) -> None:  # quiet
        pass

    # --- plumbing ---------------------------------------------------------------------------------
    def _send(self, code: int, body: bytes = b"", headers: dict | None = None, head: bool = False) -> None:
        self.send_response(code)
        for k, v in (headers or {}).items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if not head:
            self.wfile.write(body)

    def _json(self, code: int, obj, headers: dict | None = None) -> None:
        self._send(code, json.dumps(obj).encode(), {"Content-Type": "application/json", **(headers or {})})

    def _error(self, code: int, error_code: str, message: str, head: bool = False) -> None:
        self._send(code, json.dumps({"error": message}).encode(),
                   {"Content-Type": "application/json", "X-Error-Code": error_code, "X-Error-Message": message}, head)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _authorised(self, repo: Repo) -> bool:
        return not repo.private or self.headers.get("Authorization") == f"Bearer {self.standin.token}"

    def _repo(self, repo_type: str, repo_id: str, head: bool = False) -> Repo | None:
        repo = self.standin.repos.get((repo_type, repo_id))
        if repo is None or not self._authorised(repo):
            self._error(401, "RepoNotFound", "Repository Not Found for url. Please make sure you are authenticated.", head)
            return None
        return repo

    # --- routes -----------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self.standin.requests.append(("HEAD", self.path))
        self._resolve(head=True)

    def do_GET(self) -> None:
        self.standin.requests.append(("GET", self.path))
        url = urlparse(self.path)
        parts = [unquote(p) for p in url.path.split("/") if p]
        if parts == ["api", "whoami-v2"]:  # the account of the token (Gradio's local sign-in mock asks for it)
            if self.headers.get("Authorization") != f"Bearer {self.standin.token}":
                return self._error(401, "Unauthorized", "Invalid credentials in Authorization header")
            return self._json(200, {"type": "user", "name": self.standin.user, "fullname": "Stand-in User",
                                    "avatarUrl": "/avatars/standin.png", "auth": {"type": "access_token"}})
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[4] == "tree":
            return self._tree(parts[1][:-1], f"{parts[2]}/{parts[3]}", "/".join(parts[6:]), parse_qs(url.query))
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[4] == "revision":
            repo = self._repo(parts[1][:-1], f"{parts[2]}/{parts[3]}")
            if repo is not None:
                self._json(200, {"id": f"{parts[2]}/{parts[3]}", "sha": repo.sha, "private": repo.private,
                                 "siblings": [{"rfilename": p} for p in sorted(repo.files)]})
            return None
        return self._resolve(head=False)

    def do_POST(self) -> None:
        self.standin.requests.append(("POST", self.path))
        parts = [unquote(p) for p in urlparse(self.path).path.split("/") if p]
        body = self._body()
        if parts == ["api", "repos", "create"]:
            return self._create(json.loads(body))
        if parts == ["api", "validate-yaml"]:
            return self._json(200, {"errors": [], "warnings": []})
        if parts[:1] == ["api"] and len(parts) >= 6 and parts[4] in ("preupload", "commit"):
            repo = self._repo(parts[1][:-1], f"{parts[2]}/{parts[3]}")
            if repo is None:
                return None
            if self.headers.get("Authorization") != f"Bearer {self.standin.token}":
                return self._error(401, "RepoNotFound", "Invalid credentials in Authorization header")
            if parts[4] == "preupload":
                files = json.loads(body)["files"]
                return self._json(200, {"files": [{"path": f["path"], "uploadMode": "regular", "shouldIgnore": False,
                                                   "oid": None} for f in files]})
            return self._commit(repo, parts[1][:-1], f"{parts[2]}/{parts[3]}", body)
        return self._error(404, "NotFound", f"no route {self.path}")

    def _create(self, payload: dict) -> None:
        if self.headers.get("Authorization") != f"Bearer {self.standin.token}":
            return self._error(401, "Unauthorized", "Invalid username or password.")
        repo_type = payload.get("type") or "model"
        repo_id = f"{payload.get('organization') or 'user'}/{payload['name']}"
        if (repo_type, repo_id) in self.standin.repos:
            return self._error(409, "Conflict", "You already created this repo")
        self.standin.add_repo(repo_type, repo_id, {}, private=bool(payload.get("private")))
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        host = self.headers.get("Host")
        return self._json(200, {"url": f"http://{host}/{prefix}{repo_id}"})

    def _commit(self, repo: Repo, repo_type: str, repo_id: str, body: bytes) -> None:
        for line in body.splitlines():
            item = json.loads(line)
            if item["key"] == "file":
                repo.files[item["value"]["path"]] = base64.b64decode(item["value"]["content"])
            elif item["key"] in ("deletedFile",):
                repo.files.pop(item["value"]["path"], None)
        repo.sha = hashlib.sha1(repo.sha.encode() + body).hexdigest()
        repo.served.clear()
        prefix = "" if repo_type == "model" else f"{repo_type}s/"
        self._json(200, {"commitUrl": f"http://{self.headers.get('Host')}/{prefix}{repo_id}/commit/{repo.sha}",
                         "commitOid": repo.sha, "pullRequestUrl": None})

    def _tree(self, repo_type: str, repo_id: str, under: str, query: dict) -> None:
        repo = self._repo(repo_type, repo_id)
        if repo is None:
            return
        recursive = query.get("recursive", ["False"])[0].lower() == "true"
        prefix = under.rstrip("/") + "/" if under else ""
        entries, dirs = [], set()
        for path in sorted(repo.files):
            if not path.startswith(prefix):
                continue
            rest = path[len(prefix):]
            if not recursive and "/" in rest:
                dirs.add(prefix + rest.split("/")[0])
                continue
            data = repo.files[path]
            entries.append({"type": "file", "oid": _oid(data), "size": len(data), "path": path})
        entries += [{"type": "directory", "oid": "0" * 40, "size": 0, "path": d} for d in sorted(dirs)]
        self._json(200, entries)

    def _resolve(self, head: bool) -> None:
        parts = [unquote(p) for p in urlparse(self.path).path.split("/") if p]
        repo_type = "model"
        if parts and parts[0] in ("datasets", "spaces"):
            repo_type, parts = parts[0][:-1], parts[1:]
        if len(parts) < 5 or parts[2] != "resolve":
            return self._error(404, "NotFound", f"no route {self.path}", head)
        repo = self._repo(repo_type, f"{parts[0]}/{parts[1]}", head)
        if repo is None:
            return None
        revision, path = parts[3], "/".join(parts[4:])
        if revision not in ("main", repo.sha):
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}", head)
        if path not in repo.files:
            return self._error(404, "EntryNotFound", f"Entry not found: {path}", head)
        data = repo.served.get(path, repo.files[path])
        if repo.slow_s and not head:
            time.sleep(repo.slow_s)
        etag = hashlib.sha256(repo.files[path]).hexdigest()
        self._send(200, data, {"X-Repo-Commit": repo.sha, "ETag": f'"{etag}"',
                               "Content-Type": "application/octet-stream"}, head)
