"""Opaque URL tokens of the image route: what `files` serves, `media` links to and `uploads` names kept files by.

A token is an HMAC of a key (an image id, or an upload's name) under a per-process secret (IIR_MEDIA_SECRET,
read on first use, keeps URLs stable across restarts), so a URL names no server path and cannot be forged.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from functools import lru_cache

ROUTE = "iir/img"  # relative to the page, so it also works under a proxy path (Spaces, --root-path)
TOKEN_CHARS = 32  # hex characters of a token (128 bits)
UPLOAD_MARK = "u"  # tokens of kept uploads start with this (image tokens are plain hex)


@lru_cache(maxsize=1)
def _secret() -> bytes:
    given = os.environ.get("IIR_MEDIA_SECRET", "")
    return given.encode() if given else secrets.token_bytes(32)


def token(key: str) -> str:
    """The URL token of `key` (an image id, or "upload:<name>")."""
    return hmac.new(_secret(), key.encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()[:TOKEN_CHARS]
