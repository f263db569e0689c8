"""Parsers of ImageScope replies. None of them raises: junk gives a documented fallback.

- `repair_json`: the first JSON object or array in a reply, repaired (code fences, single quotes, Python
  literals, trailing or missing commas, unescaped newlines, unclosed strings and brackets).
- `parse_stage1`: atomic instructions + target descriptions, from JSON, else from the prose layout of
  the prompt's example ("- Addition: ..." lines, Step 2 bullets), else a fallback built from the instruction.
- `parse_stage2`: (question, truth) propositions, from JSON or "Q: ... A: Yes/No" lines.
- `parse_yes_no` / `parse_evaluation`: verifier and evaluator answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from interactive_ir.modes.composed.imagescope.prompts import BLANK_REFERENCE, INSTRUCTION_TYPES

_FENCE = re.compile(r"```(?:json|JSON)?\s*([\s\S]*?)(?:```|$)")
_LITERALS = {"True": "true", "False": "false", "None": "null"}


def _read_string(s: str, i: int) -> tuple[str, int]:
    """The string that opens at s[i] (a double or single quote) as a JSON string, and the index after it.

    A quote that is not followed by a delimiter is part of the text (it's, "quoted" words); newlines are
    escaped, an unclosed string ends at the end of `s`."""
    n = len(s)
    quote, j, buf = s[i], i + 1, ['"']
    while j < n:
        d = s[j]
        if d == "\\" and j + 1 < n:
            buf.append(s[j:j + 2] if s[j + 1] != "'" else "'")
            j += 2
            continue
        if d == quote:
            k = j + 1
            while k < n and s[k] in " \t":
                k += 1
            if k >= n or s[k] in ",:]}\n\r" or (s[k] == quote and k > j + 1):
                break
            buf.append('\\"' if d == '"' else d)
            j += 1
            continue
        if d == '"':
            buf.append('\\"')
        elif d == "\n":
            buf.append("\\n")
        elif d in "\r\t":
            buf.append(" ")
        else:
            buf.append(d)
        j += 1
    buf.append('"')
    return "".join(buf), j + 1


def _scan_repair(s: str) -> str | None:
    """Repair the JSON value that starts at s[0] ('{' or '['); None when nothing usable."""
    out: list[str] = []
    stack: list[str] = []
    i, n = 0, len(s)
    last = ""  # the last significant emitted char class: "value", ",", ":", "open"

    def need_comma():
        if last == "value" and stack:
            out.append(",")

    while i < n:
        c = s[i]
        if c in "\"'":
            need_comma()
            token, i = _read_string(s, i)
            out.append(token)
            last = "value"
            continue
        if c in "{[":
            need_comma()
            stack.append("}" if c == "{" else "]")
            out.append(c)
            last = "open"
        elif c in "}]":
            if not stack:
                break
            while out and out[-1] == ",":
                out.pop()
            if out and out[-1] == ":":  # "key": } -> "key": null }
                out.append("null")
            closer = stack.pop()
            out.append(closer)
            last = "value"
            if not stack:
                break
        elif c == ",":
            if last not in (",", "open"):
                out.append(",")
            last = ","
        elif c == ":":
            out.append(":")
            last = ":"
        elif c.isspace():
            pass
        else:
            m = re.match(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?|true|false|null|True|False|None", s[i:])
            if m:
                need_comma()
                out.append(_LITERALS.get(m.group(0), m.group(0)))
                last = "value"
                i += len(m.group(0))
                continue
            # a bare word: read to the next delimiter and quote it
            m = re.match(r"[^,:\]}\n]+", s[i:])
            word = m.group(0).strip() if m else c
            if word:
                need_comma()
                out.append(json.dumps(word))
                last = "value"
            i += len(m.group(0)) if m else 1
            continue
        i += 1
    if not out:
        return None
    while out and out[-1] in (",", ":"):
        if out[-1] == ":":
            out.append("null")
            break
        out.pop()
    out.extend(reversed(stack))
    return "".join(out)


def repair_json(text: str) -> Any | None:
    """The first JSON object/array in `text` (inside a code fence when there is one), repaired; else None."""
    if not text:
        return None
    candidates = [m.group(1) for m in _FENCE.finditer(text)] + [text]
    for cand in candidates:
        for start in [m.start() for m in re.finditer(r"[{\[]", cand)][:8]:
            chunk = cand[start:]
            try:
                return json.loads(chunk[: _balanced_end(chunk)])
            except (json.JSONDecodeError, ValueError):
                pass
            fixed = _scan_repair(chunk)
            if fixed is None:
                continue
            try:
                return json.loads(fixed)
            except (json.JSONDecodeError, ValueError):
                continue
    return None


def _balanced_end(s: str) -> int:
    depth, in_str, esc = 0, False, False
    for i, c in enumerate(s):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
        elif c == '"':
            in_str = True
        elif c in "{[":
            depth += 1
        elif c in "}]":
            depth -= 1
            if depth == 0:
                return i + 1
    return len(s)


# --- stage 1 -------------------------------------------------------------------------------------------

_TYPE_OF = {t.lower(): t for t in INSTRUCTION_TYPES}


def _norm_type(t: Any) -> str | None:
    t = str(t or "").strip().strip("*:()[]\"' ").lower()
    t = re.sub(r"^\(?\d\)?\s*", "", t)
    return _TYPE_OF.get(t)


def _clean(s: Any) -> str:
    s = " ".join(str(s or "").split()).strip().strip("\"'` ")
    return re.sub(r"^(?:[-*•]+|\(?\d{1,2}[.)])\s*", "", s).strip()


@dataclass
class Stage1Result:
    """What the stage 1 reasoner produced, after repair."""

    atomic: list[tuple[str, str]]  # (instruction type, atomic instruction)
    descriptions: list[str]  # target descriptions: core elements, enhanced details, comprehensive synthesis
    source: str = "json"  # "json", "repaired" (JSON that needed fixing), "prose", or "fallback"
    notes: list[str] = field(default_factory=list)  # what was dropped or filled in

    @property
    def types(self) -> list[str]:
        return list(dict.fromkeys(t for t, _ in self.atomic))


def _atomic_from(obj: Any) -> list[tuple[str, str]]:
    out = []
    for el in obj if isinstance(obj, list) else []:
        kind, text = None, ""
        if isinstance(el, (list, tuple)) and len(el) >= 2:
            kind, text = _norm_type(el[0]), _clean(el[1])
        elif isinstance(el, dict):
            kind = _norm_type(el.get("type") or el.get("instruction_type") or el.get("kind"))
            text = _clean(el.get("instruction") or el.get("text") or el.get("content") or "")
            if kind is None and len(el) == 1:
                (k, v), = el.items()
                kind, text = _norm_type(k), _clean(v)
        elif isinstance(el, str) and ":" in el:
            k, _, v = el.partition(":")
            kind, text = _norm_type(k), _clean(v)
        if kind and text:
            out.append((kind, text))
    return out


_NOT_A_DESCRIPTION = re.compile(r"\bstep\s*\d|^(?:instruction|reference image|query|solve)\b|:\s*$", re.I)


def _usable(s: str, echoes: set[str]) -> bool:
    """A target description: two words or more, not a heading, not a copy of the inputs or the example."""
    return (len(re.findall(r"[A-Za-z]+", s)) >= 2 and not _NOT_A_DESCRIPTION.search(s)
            and s.lower().rstrip(". ") not in echoes)


_EXAMPLE_TEXTS = ("A woman with dark hair is smiling under a gray umbrella with a white flower hanging from it",
                  "A woman holds a baby", "A woman with dark hair holds a baby under an umbrella",
                  "A woman with dark hair holds a baby and is smiling, under a gray umbrella",
                  "has the person holding a baby", "Make the woman holding a baby")


def _descriptions_from(obj: Any, echoes: set[str] = frozenset()) -> list[str]:
    if isinstance(obj, dict):
        obj = list(obj.values())
    out = []
    for el in obj if isinstance(obj, list) else []:
        s = _clean(el[-1] if isinstance(el, (list, tuple)) and el else el)
        s = re.sub(r"^(?:core elements|enhanced details|comprehensive synthesis)\s*:\s*", "", s, flags=re.I)
        if _usable(s, echoes) and s not in out:
            out.append(s)
    return out[:3]


def _prose_stage1(reply: str, echoes: set[str] = frozenset()) -> tuple[list[tuple[str, str]], list[str]]:
    atomic, descs = [], []
    step2 = re.split(r"step\s*2", reply, maxsplit=1, flags=re.I)
    for m in re.finditer(r"^\s*[-*•]?\s*(?:\(\d\)\s*)?\**(Addition|Removal|Modification|Comparison|Retention)\**\s*:\s*(.+)$",
                         step2[0], re.I | re.M):
        atomic.append((_TYPE_OF[m.group(1).lower()], _clean(m.group(2))))
    if len(step2) > 1:
        for m in re.finditer(r"^\s*(?:[-*•]|\(?\d[.)])\s+(.+)$", step2[1], re.M):
            s = _clean(m.group(1))
            if s.startswith("{") or s.startswith('"'):
                continue
            if _usable(s, echoes) and s not in descs:
                descs.append(s)
    return atomic, descs[:3]


def fallback_descriptions(instruction: str, reference_description: str) -> list[str]:
    """Used when the reasoner gives none: the instruction alone, and appended to the reference description."""
    inst = " ".join(instruction.split())
    ref = " ".join((reference_description or "").split())
    if not ref or ref == BLANK_REFERENCE:
        return [inst]
    return [inst, f"{ref.rstrip(' .')}, {inst}"]


DESCRIPTION_CHARS = 500  # a target description (searched as text) at most this long, cut at a word


def _capped(text: str, limit: int = DESCRIPTION_CHARS) -> str:
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0]
    return cut if len(cut) >= limit // 2 else text[:limit]


def parse_stage1(reply: str, instruction: str, reference_description: str = "") -> Stage1Result:
    """Atomic instructions and up to three target descriptions (never empty)."""
    notes: list[str] = []
    obj = repair_json(reply or "")
    source = "json"
    if obj is not None:
        try:
            json.loads(_FENCE.search(reply).group(1) if _FENCE.search(reply) else reply.strip())
        except (json.JSONDecodeError, ValueError, AttributeError):
            source = "repaired"
    atomic: list[tuple[str, str]] = []
    descs: list[str] = []
    # copies of the reference description or of the prompt's example are not target descriptions
    echoes = {t.lower().rstrip(". ") for t in (*_EXAMPLE_TEXTS, reference_description or "", instruction)}
    if isinstance(obj, dict):
        atomic = _atomic_from(obj.get("step1") or obj.get("atomic") or obj.get("instructions"))
        descs = _descriptions_from(obj.get("step2") or obj.get("descriptions") or obj.get("target"), echoes)
    if not descs or not atomic:
        p_atomic, p_descs = _prose_stage1(reply or "", echoes)
        if not descs and p_descs:
            descs, source = p_descs, "prose"
        atomic = atomic or p_atomic
    example = {t.lower() for t in _EXAMPLE_TEXTS}
    atomic = [(k, x) for k, x in atomic if x.lower().rstrip(". ") not in example]  # the example's, copied
    if not atomic:
        atomic = [("Modification", " ".join(instruction.split()))]
        notes.append("no atomic instructions: the instruction is one modification")
    if not descs:
        descs = fallback_descriptions(instruction, reference_description)
        source = "fallback"
        notes.append("no target descriptions: used the instruction (and the reference description)")
    descs = [_capped(d) for d in descs]  # each is searched as text: a flood (a model's, a caption's) is cut at a word
    return Stage1Result(atomic, descs, source, notes)


# --- stage 2 -------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Proposition:
    question: str  # a yes/no question for the verifier
    truth: bool  # the answer the target image should give


def _truth(v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    s = str(v or "").strip().lower()
    if re.match(r"^\W*(true|yes)\b", s):
        return True
    if re.match(r"^\W*(false|no)\b", s):
        return False
    return None


def parse_stage2(reply: str, limit: int = 8) -> list[Proposition]:
    """(question, truth) pairs; [] when the reply has none."""
    out: list[Proposition] = []
    obj = repair_json(reply or "")
    items = obj.get("step2") or obj.get("questions") if isinstance(obj, dict) else obj if isinstance(obj, list) else None
    for el in items if isinstance(items, list) else []:
        q, t = None, None
        if isinstance(el, (list, tuple)) and len(el) >= 2:
            q, t = _clean(el[0]), _truth(el[1])
        elif isinstance(el, dict):
            q = _clean(el.get("question") or el.get("q") or "")
            t = _truth(el.get("answer", el.get("truth", el.get("a"))))
        if q and t is not None and q.endswith("?"):
            out.append(Proposition(q, t))
    if not out:
        for m in re.finditer(r"Q\s*:\s*(.+?\?)\s*A\s*:\s*(yes|no|true|false)", reply or "", re.I):
            out.append(Proposition(_clean(m.group(1)), _truth(m.group(2))))
    seen: dict[str, Proposition] = {}
    for p in out:
        seen.setdefault(p.question.lower(), p)
    return list(seen.values())[:limit]


# --- verifier and evaluator ----------------------------------------------------------------------------


def parse_yes_no(reply: str) -> bool | None:
    """True for yes, False for no, None when the reply says neither (the first of the two words wins)."""
    m = re.search(r"\b(yes|no|true|false)\b", (reply or "").lower())
    if not m:
        return None
    return m.group(1) in ("yes", "true")


def parse_evaluation(reply: str) -> tuple[bool | None, str]:
    """(decision, explanation) from "ANSWER: Yes|No" then a reason; the first yes/no word otherwise."""
    text = reply or ""
    m = re.search(r"answer\s*[:：]?\s*\**\s*\[?\s*(yes|no)\b", text, re.I)
    decision = (m.group(1).lower() == "yes") if m else parse_yes_no(text)
    rest = text[m.end():] if m else text
    explanation = " ".join(rest.replace("]", " ").split()).strip(" .:-*")
    return decision, explanation[:300]
