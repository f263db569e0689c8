"""Loaders for released dialogue files, replayed by the `fixed-dialogue` protocols.

Supported formats (detected from the content):

1. **ChatIR** (github.com/levymsn/ChatIR, `dialogues/*.json`, incl. `VisDial_v1.0_queries_val.json`):
   a JSON list of ``{"img": "unlabeled2017/000000185565.jpg", "dialog": [caption, "question? answer", ...]}``.
   Entry 0 is the caption; each later entry is a question and its answer joined by a space. We split
   it at the first "?" into (question, answer) and also keep the entries verbatim (``Query.rounds_text``)
   so the ChatIR baseline query (the first t+1 entries joined by ", ") is rebuilt exactly.
2. **PlugIR** (github.com/Saehyung-Lee/PlugIR, `dialogues/*.json`): the same layout, but each entry
   is already the reformulated query of its round (evaluated with PlugIR's `eval.py --split`). Replay
   these with `fixed-dialogue:split`; the (question, answer) split is meaningless for them.
3. **VisDial v1.0** (`visdial_1.0_val.json`): ``{"split": ..., "data": {"questions": [...], "answers":
   [...], "dialogs": [{"image_id": 185565, "caption": ..., "dialog": [{"question": i, "answer": j}, ...]}]}}``.
   Targets become ``VisualDialog_<split>_<image_id:012d>.jpg`` (the released image file names).
4. Our own queries JSONL with a ``"dialog": [[question, answer], ...]`` field (see `queries`).

Targets are matched to index ids by `resolve_targets`: the exact id, else the unique id with the same
file name (so `unlabeled2017/000000185565.jpg` finds `000000185565.jpg` in an index of that folder).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from interactive_ir.errors import BadInputError
from interactive_ir.evaluation.query_records import (
    Query,
    looks_like_jsonl,
    parse_queries_jsonl,
    query_from_record,
    unique_ids,
)

log = logging.getLogger(__name__)

CHATIR_SEP = ", "  # ChatIR's and PlugIR's eval.py separator between dialogue entries


def split_entry(entry: str) -> tuple[str, str]:
    """'What color is the car? red' -> ('What color is the car?', 'red'). No '?' -> (entry, '')."""
    entry = (entry or "").strip()
    q, mark, a = entry.partition("?")
    if not mark:
        return entry, ""
    a = re.sub(r"^\s*(?:answer|a)\s*:\s*", "", a.strip(), flags=re.IGNORECASE)
    return (q.strip() + "?", a.strip())


def chatir_query(entries: Sequence[str], rounds: int) -> str:
    """ChatIR's round-`rounds` text query: the caption and the first `rounds` entries joined by ', '."""
    return CHATIR_SEP.join(e for e in entries[: rounds + 1])


def concat_query(description: str, dialog: Sequence[tuple[str, str]], rounds: int) -> str:
    """The same ChatIR layout built from (question, answer) pairs."""
    return chatir_query([description, *(f"{q} {a}".strip() for q, a in dialog)], rounds)


def _from_chatir(data: list, path: Path) -> list[Query]:
    out = []
    for i, item in enumerate(data):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise BadInputError(f"{where}: expected an object like {{\"img\": ..., \"dialog\": [...]}}")
        if "target" in item:  # our own format, as a JSON list
            out.append(query_from_record(item, where))
            continue
        img, dialog = item.get("img"), item.get("dialog")
        if not isinstance(img, str) or not isinstance(dialog, list) or not dialog or \
                not all(isinstance(e, str) for e in dialog):
            raise BadInputError(f'{where}: a ChatIR/PlugIR dialogue needs "img" (a path) and "dialog" (a list of '
                                "strings: the caption, then one entry per round)")
        entries = tuple(e.strip() for e in dialog)
        out.append(Query(qid=img, target=img, description=entries[0],
                         dialog=tuple(split_entry(e) for e in entries[1:]), rounds_text=entries))
    return out


def _from_visdial(data: dict, path: Path) -> list[Query]:
    body = data.get("data", data)
    try:
        questions, answers, dialogs = body["questions"], body["answers"], body["dialogs"]
    except (KeyError, TypeError) as e:
        raise BadInputError(f'{path}: a VisDial file needs data.questions, data.answers and data.dialogs') from e
    split = str(data.get("split") or "val2018")
    out = []
    for i, d in enumerate(dialogs):
        try:
            image_id = int(d["image_id"])
            caption = str(d["caption"]).strip()
            pairs = []
            for r in d.get("dialog", []):
                if "answer" not in r:  # the test split leaves the last answer out
                    break
                q = str(questions[r["question"]]).strip()
                pairs.append((q if q.endswith("?") else q + "?", str(answers[r["answer"]]).strip()))
        except (KeyError, TypeError, ValueError, IndexError) as e:
            raise BadInputError(f"{path}: dialog {i} is not in the VisDial v1.0 layout ({e!r})") from e
        target = f"VisualDialog_{split}_{image_id:012d}.jpg"
        out.append(Query(qid=target, target=target, description=caption, dialog=tuple(pairs)))
    return out


def read_dialogues(path: Path) -> list[Query]:
    """Queries (with dialogues) from a ChatIR, PlugIR or VisDial v1.0 JSON file, or a queries JSONL."""
    path = Path(path)
    if not path.is_file():
        raise BadInputError(f"dialogue file not found: {path}")
    text = path.read_text(encoding="utf-8-sig")
    stripped = text.lstrip()
    if stripped[:1] not in "[{":
        raise BadInputError(f"{path} is not a dialogue JSON file")
    if looks_like_jsonl(text) and not (path.suffix.lower() == ".json" and len(text.strip().splitlines()) == 1):
        return parse_queries_jsonl(text, path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as e:
        raise BadInputError(f"{path} is not valid JSON (line {e.lineno}: {e.msg})") from e
    if isinstance(data, list):
        queries = _from_chatir(data, path)
    elif isinstance(data, dict) and ("dialogs" in data or "dialogs" in data.get("data", {})):
        queries = _from_visdial(data, path)
    elif isinstance(data, dict) and "target" in data:
        queries = [query_from_record(data, str(path))]
    else:
        raise BadInputError(f"{path}: unknown dialogue format; expected a ChatIR/PlugIR list of "
                            '{"img", "dialog"} objects or a VisDial v1.0 file')
    if not queries:
        raise BadInputError(f"{path} holds no dialogues")
    return unique_ids(queries)


def attach_dialogues(queries: Sequence[Query], dialogues: Sequence[Query]) -> list[Query]:
    """`queries` with the dialogue of the same target taken from `dialogues` (unmatched queries keep theirs)."""
    by_target: dict[str, Query] = {}
    for d in dialogues:
        by_target.setdefault(d.target, d)
        by_target.setdefault(PurePosixPath(d.target).name, d)
    out = []
    for q in queries:
        d = by_target.get(q.target) or by_target.get(PurePosixPath(q.target).name)
        out.append(q if d is None else Query(**{**q.__dict__, "dialog": d.dialog, "rounds_text": d.rounds_text}))
    return out


def resolve_targets(queries: Sequence[Query], ids: Sequence[str]) -> tuple[list[Query], list[Query]]:
    """(queries whose target is in the index, with the index's id; queries whose target is not)."""
    known = set(ids)
    by_name: dict[str, str | None] = {}
    for i in ids:
        name = PurePosixPath(i).name
        by_name[name] = None if name in by_name else i  # None: ambiguous
    by_stem: dict[str, str | None] = {}
    for i in ids:
        stem = PurePosixPath(i).stem
        by_stem[stem] = None if stem in by_stem else i

    def resolve(image_id: str) -> str | None:
        if image_id in known:
            return image_id
        return by_name.get(PurePosixPath(image_id).name) or by_stem.get(PurePosixPath(image_id).name)

    found, missing = [], []
    for q in queries:
        target = resolve(q.target)
        reference = resolve(q.reference) if q.reference else ""
        if target and reference is not None:
            changes = {"target": target, "reference": reference,
                       "relevant": tuple(r for r in (resolve(x) for x in q.relevant) if r),
                       "subset": tuple(r for r in (resolve(x) for x in q.subset) if r)}
            found.append(q if all(getattr(q, k) == v for k, v in changes.items()) else Query(**{**q.__dict__, **changes}))
        else:
            missing.append(q)
    return found, missing


def write_chatir(path: Path, dialogues: Sequence[tuple[str, str, Sequence[tuple[str, str]]]]) -> Path:
    """Write (target, description, [(question, answer), ...]) triples in the ChatIR layout."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"img": t, "dialog": [d, *(f"{q} {a}".strip() for q, a in pairs)]} for t, d, pairs in dialogues]
    path.write_text(json.dumps(rows, ensure_ascii=False), encoding="utf-8")
    return path
