"""Which first question the default page asks after a description, over many descriptions (issue 38).

    python bench/first_questions.py --index INDEX --queries QUERIES.jsonl [--n 300]

For each of the first `--n` descriptions (`description` of each line of a queries file, as `bench_clicks.py`
writes them: `<work>/dev-1000/queries.jsonl`), a search on the belief as the page makes it, then the round's
question (no LLM). Prints how many got no question at all (the page then asks nothing that round), and the
questions asked most often. Counts, not timings: the machine's load does not change them.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def descriptions(path: Path, n: int) -> list[str]:
    out = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            text = (json.loads(line).get("description") or "").strip() if line.strip() else ""
            if text:
                out.append(text)
            if len(out) >= n:
                break
    return out


def first_questions(engine, texts: list[str]) -> Counter:
    """The first question's text per description ("" where none was asked)."""
    asked: Counter = Counter()
    for text in texts:
        s = engine.new_session(belief=True)
        engine.search_text(s, text)
        q = s.question
        asked["" if q is None else (q.text if q.kind != "yesno" else "Is there ... ? (yes/no)")] += 1
    return asked


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--index", required=True, help="an index folder")
    ap.add_argument("--queries", required=True, type=Path, help="a queries .jsonl with a description per line")
    ap.add_argument("--n", type=int, default=300, help="descriptions read from the file's start")
    args = ap.parse_args(argv)
    from interactive_ir.assembly.app import assemble
    from interactive_ir.assembly.options import AppConfig

    engine = assemble(AppConfig(index=args.index, llm="none")).engine
    texts = descriptions(args.queries, args.n)
    asked = first_questions(engine, texts)
    print(f"## First question after a description ({len(texts)} descriptions, {args.index})")
    print("| first question | descriptions |")
    print("|---|---|")
    print(f"| (none: the page asks nothing) | {asked.get('', 0)} |")
    for text, n in asked.most_common():
        if text:
            print(f"| {text} | {n} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
