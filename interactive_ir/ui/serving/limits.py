"""Per-client limits of a serving process: who a request comes from, and how much each client did lately.

`client_of` is the address the server saw (uvicorn replaces it with the X-Forwarded-For address only when
the connection comes from a proxy named in `AppConfig.trusted_proxies`: `process.install` sets that).
`Addresses` matches an address against a list of addresses and networks. `WindowCounter` sums what each
client did within a sliding window (enrolments, uploaded bytes), bounded in memory.
"""

from __future__ import annotations

import ipaddress
import threading
import time
from collections import deque


def client_of(request) -> str:
    """The client address of a Gradio or Starlette request, or of an ASGI scope ("?" when unknown)."""
    if isinstance(request, dict):
        client = request.get("client")
        return str(client[0]) if client else "?"
    try:
        return str(request.client.host)
    except AttributeError:
        return "?"


class Addresses:
    """A set of addresses and networks from text such as "127.0.0.1, ::1, 10.0.0.0/8" (unparsable items
    raise ValueError naming them)."""

    def __init__(self, text: str | None = ""):
        self.networks = []
        for item in (text or "").replace(";", ",").split(","):
            item = item.strip()
            if not item:
                continue
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                raise ValueError(f"{item!r} is not an address or network (e.g. 127.0.0.1 or 10.0.0.0/8)") from None

    def __contains__(self, address: object) -> bool:
        try:
            ip = ipaddress.ip_address(str(address).strip("[]"))
        except ValueError:
            return False
        return any(ip in net for net in self.networks)

    def __bool__(self) -> bool:
        return bool(self.networks)


class WindowCounter:
    """Amounts per key within the last `window_s` seconds (thread-safe). At most `max_entries` are kept: the
    oldest are forgotten first, so a flood of keys cannot grow memory."""

    def __init__(self, window_s: float, clock=time.monotonic, max_entries: int = 100_000, merge_s: float = 0.0):
        self.window_s, self.clock, self.max_entries = float(window_s), clock, max_entries
        self.merge_s = float(merge_s)  # an amount within this many seconds of the key's last entry joins it (0: never)
        self._entries: deque[tuple[float, str, float]] = deque()  # (time, key, amount), oldest first
        self._by_key: dict[str, float] = {}
        self._total = 0.0
        self._lock = threading.Lock()

    def _expire(self, now: float) -> None:
        while self._entries and (now - self._entries[0][0] >= self.window_s or len(self._entries) > self.max_entries):
            _, key, amount = self._entries.popleft()
            left = self._by_key.get(key, 0.0) - amount
            if left > 1e-9:
                self._by_key[key] = left
            else:
                self._by_key.pop(key, None)
            self._total -= amount

    def of(self, key: str) -> float:
        with self._lock:
            self._expire(self.clock())
            return self._by_key.get(key, 0.0)

    def total(self) -> float:
        with self._lock:
            self._expire(self.clock())
            return max(0.0, self._total)

    def add(self, key: str, amount: float = 1.0) -> None:
        with self._lock:
            now = self.clock()
            self._entries.append((now, key, float(amount)))
            self._by_key[key] = self._by_key.get(key, 0.0) + float(amount)
            self._total += float(amount)
            self._expire(now)

    def take(self, key: str, amount: float, limit: float) -> bool:
        """Add `amount` for `key` unless that takes it over `limit` (then nothing changes): True when added."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            if self._by_key.get(key, 0.0) + amount > limit:
                return False
            self._append(now, key, float(amount))
            return True

    def _append(self, now: float, key: str, amount: float) -> None:
        last = self._entries[-1] if self._entries else None
        if last is not None and last[1] == key and now - last[0] < self.merge_s:  # a stream counted chunk by chunk
            self._entries[-1] = (last[0], key, last[2] + amount)
        else:
            self._entries.append((now, key, amount))
        self._by_key[key] = self._by_key.get(key, 0.0) + amount
        self._total += amount

    def give_back(self, key: str, amount: float) -> None:
        """Take back up to `amount` from `key`'s latest entries (counted ahead, then not used). Unlike a negative
        `add`, nothing is owed later: the entries themselves shrink."""
        with self._lock:
            left = float(amount)
            for i in range(len(self._entries) - 1, -1, -1):
                if left <= 1e-9:
                    break
                t, k, a = self._entries[i]
                if k != key or a <= 0:
                    continue
                cut = min(a, left)
                self._entries[i] = (t, k, a - cut)
                left -= cut
                self._total -= cut
                rest = self._by_key.get(key, 0.0) - cut
                if rest > 1e-9:
                    self._by_key[key] = rest
                else:
                    self._by_key.pop(key, None)

    def wait_s(self, key: str) -> float:
        """Seconds until `key`'s oldest entry in the window leaves it (0 when it has none)."""
        with self._lock:
            now = self.clock()
            self._expire(now)
            oldest = next((t for t, k, _ in self._entries if k == key), None)
            return 0.0 if oldest is None else max(0.0, oldest + self.window_s - now)
