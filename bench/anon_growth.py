"""Which anonymous memory of a running server grew, and what is in it (Linux; reads /proc/PID/smaps and /proc/PID/mem,
so run it as the server's user or root).

    python bench/anon_growth.py snap PID before.json     # after warm-up
    python bench/anon_growth.py diff PID before.json     # later: the mappings that grew, the strings inside them

How the interned-strings step of bench/soak.py was found (docs/benchmarks/memory-soak.md): a new 7.34 MiB
mapping with no strings, whose bytes (`dump`) are a CPython dict keys object.
"""
import collections
import json
import re
import sys


def snap(pid):
    maps = []
    cur = None
    for line in open(f"/proc/{pid}/smaps"):
        parts = line.split()
        if not parts[0].endswith(":"):
            lo, hi = (int(x, 16) for x in parts[0].split("-"))
            path = parts[5] if len(parts) > 5 else ""
            cur = {"lo": lo, "hi": hi, "path": path, "perm": parts[1], "rss": 0, "anon": 0}
            maps.append(cur)
        elif parts[0] == "Rss:":
            cur["rss"] = int(parts[1])
        elif parts[0] == "Anonymous:":
            cur["anon"] = int(parts[1])
    return maps

def strings(pid, lo, hi, limit=64 << 20):
    c = collections.Counter()
    zero = 0
    total = 0
    with open(f"/proc/{pid}/mem", "rb") as f:
        f.seek(lo)
        n = min(hi - lo, limit)
        off = 0
        while off < n:
            try:
                f.seek(lo + off)
                b = f.read(min(1 << 20, n - off))
            except OSError:
                off += 1 << 20
                continue
            total += len(b)
            zero += b.count(0)
            for m in re.finditer(rb"[ -~]{8,}", b):
                c[m.group()[:80]] += 1
            off += len(b)
    return c, zero, total

if __name__ == "__main__":
    cmd, pid = sys.argv[1], int(sys.argv[2])
    now = snap(pid)
    if cmd == "snap":
        json.dump(now, open(sys.argv[3], "w"))
        print("anon MB", sum(m["anon"] for m in now) / 1024)
        sys.exit()
    old = {(m["lo"], m["hi"]): m for m in json.load(open(sys.argv[3]))}
    oldlo = {m["lo"]: m for m in old.values()}
    grown = []
    for m in now:
        o = old.get((m["lo"], m["hi"])) or oldlo.get(m["lo"])
        d = m["anon"] - (o["anon"] if o else 0)
        if d > 256:
            grown.append((d, m, o is None))
    grown.sort(key=lambda x: -x[0])
    print("anon total", sum(m["anon"] for m in old.values()) / 1024, "->", sum(m["anon"] for m in now) / 1024)
    for d, m, new in grown[:15]:
        print(f"{d/1024:+.1f} MB {m['lo']:x}-{m['hi']:x} size {(m['hi']-m['lo'])/2**20:.2f} MiB {m['perm']} {m['path'] or 'anon'} {'NEW' if new else ''}")
    for _d, m, _new in grown[:4]:
        c, zero, total = strings(pid, m["lo"], m["hi"])
        print(f"--- {m['lo']:x}: zero bytes {zero/max(total,1):.0%}; top strings:")
        for s, k in c.most_common(25):
            print(f"  {k:6d} {s!r}")

def dump(pid, lo, hi, out):
    with open(f"/proc/{pid}/mem", "rb") as f, open(out, "wb") as g:
        f.seek(lo)
        g.write(f.read(hi - lo))
