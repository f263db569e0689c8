"""One query record: the `Query` type and its parsing from JSON objects and JSONL text (the layout is in
`evaluation.queries`). The lowest module of the query files: `queries` and `dialogues` both read through it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from interactive_ir.errors import BadInputError


@dataclass(frozen=True)
class Query:
    """One simulated search."""

    qid: str  # unique query id (the key in ranks.json)
    target: str  # the image id to find
    description: str  # the round-0 text
    captions: tuple[str, ...] = ()  # what the simulated user knows about the target (held-out captions)
    relevant: tuple[str, ...] = ()  # other ground-truth relevant image ids (the target always counts)
    dialog: tuple[tuple[str, str], ...] = ()  # a fixed dialogue to replay: (question, answer) pairs
    rounds_text: tuple[str, ...] = ()  # per-round queries given verbatim (PlugIR's reformulated files), round 0 first
    meta: Mapping = field(default_factory=dict)  # anything else found in the record
    reference: str = ""  # a reference image id: round 0 of composed protocols changes it as `description` says
    subset: tuple[str, ...] = ()  # the query's subset group (CIRR's img_set, reference left out): Recall_subset@K

    @property
    def knowledge(self) -> list[str]:
        """Every text the simulated user may draw on: the description, then its other captions."""
        out = [self.description]
        out += [c for c in self.captions if c and c != self.description]
        return out

    def to_dict(self) -> dict:
        d = {"id": self.qid, "target": self.target, "description": self.description, "captions": list(self.captions)}
        if self.relevant:
            d["relevant"] = list(self.relevant)
        if self.dialog:
            d["dialog"] = [list(p) for p in self.dialog]
        if self.rounds_text:
            d["rounds_text"] = list(self.rounds_text)
        if self.reference:
            d["reference"] = self.reference
        if self.subset:
            d["subset"] = list(self.subset)
        return d


def _strs(value, where: str, what: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise BadInputError(f"{where}: {what!r} must be a list of strings")
    return tuple(v.strip() for v in value if v.strip())


def _pairs(value, where: str) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    out = []
    for item in value:
        if isinstance(item, Mapping):
            q, a = item.get("question", ""), item.get("answer", "")
        elif isinstance(item, (list, tuple)) and len(item) == 2:
            q, a = item
        else:
            raise BadInputError(f'{where}: "dialog" items must be [question, answer] pairs or '
                                f'{{"question": ..., "answer": ...}} objects, got {item!r}')
        if not isinstance(q, str) or not isinstance(a, str):
            raise BadInputError(f"{where}: dialogue questions and answers must be strings")
        out.append((q.strip(), a.strip()))
    return tuple(out)


def query_from_record(row: Mapping, where: str = "query") -> Query:
    """A `Query` from one JSON object (see the module docstring); raises BadInputError when unusable."""
    if not isinstance(row, Mapping):
        raise BadInputError(f"{where}: expected a JSON object, got {type(row).__name__}")
    target = row.get("target")
    if not isinstance(target, str) or not target.strip():
        raise BadInputError(f'{where}: needs "target": the id of the image to find')
    description = row.get("description")
    if not isinstance(description, str) or not description.strip():
        raise BadInputError(f'{where}: needs "description": the first text the simulated user types')
    known = {"id", "target", "description", "captions", "relevant", "dialog", "rounds_text", "reference", "subset"}
    reference = row.get("reference") or ""
    if not isinstance(reference, str):
        raise BadInputError(f'{where}: "reference" must be an image id (a string)')
    return Query(
        qid=str(row.get("id") or target).strip(),
        target=target.strip(),
        description=description.strip(),
        captions=_strs(row.get("captions"), where, "captions"),
        relevant=_strs(row.get("relevant"), where, "relevant"),
        dialog=_pairs(row.get("dialog"), where),
        rounds_text=_strs(row.get("rounds_text"), where, "rounds_text"),
        meta={k: v for k, v in row.items() if k not in known},
        reference=reference.strip(),
        subset=_strs(row.get("subset"), where, "subset"),
    )


def unique_ids(queries: Iterable[Query]) -> list[Query]:
    """Queries with distinct ids: a repeated id gets '#2', '#3', ... appended (in file order)."""
    seen: dict[str, int] = {}
    out = []
    for q in queries:
        n = seen.get(q.qid, 0) + 1
        seen[q.qid] = n
        out.append(q if n == 1 else Query(**{**q.__dict__, "qid": f"{q.qid}#{n}"}))
    return out


def looks_like_jsonl(text: str) -> bool:
    """True for one JSON object per line (several lines starting with '{')."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return bool(lines) and lines[0].lstrip().startswith("{") and (len(lines) == 1 or lines[1].lstrip().startswith("{"))


def parse_queries_jsonl(text: str, path: Path) -> list[Query]:
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as e:
            raise BadInputError(f"{path}:{n}: not valid JSON ({e.msg}); expected one object per line like "
                                '{"target": "img.jpg", "description": "...", "captions": [...]}') from e
        out.append(query_from_record(row, f"{path}:{n}"))
    if not out:
        raise BadInputError(f"queries file {path} holds no queries")
    return unique_ids(out)
