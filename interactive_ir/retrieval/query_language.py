"""The search box's language, one for the page, the CLI and the API:

    dog on a beach -leash "red kite" date:2019..2021 folder:trips camera:canon tag:family -album:work

- words are the description, embedded as usual;
- `-word` is a NOT term: images that match it score lower (`not_terms.py` says how, measured in bench);
- `"a phrase"` must appear exactly (case-insensitive) in a caption, the file name or a metadata value;
  it stays part of the description too; `-"a phrase"` leaves such images out (a filter, not a NOT term);
  a quote that opens no phrase (a space just inside it, as in a caption's `says " Teen Wolf "`, or nothing
  closing it) is text: its words are part of the description;
- `field:value` filters (`value` may be quoted): `date:` (2019, 2019-06, 2019-06-14, 2019..2021, ..2020,
  2020-03..), `folder:`, `camera:`, `orientation:` (portrait, landscape, square), `file:`, and any field
  of the metadata file (`tag:`, `album:`, `person:`, ...); `-field:value` negates one.

`parse_query(text)` returns a typed `Query`; a malformed query raises QueryError, one line naming the bad
token. Whether the index holds a field is checked when the filters run (`index/filters.py`).
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass

from interactive_ir.errors import QueryError
from interactive_ir.index.filters import BUILT_IN, ORIENTATIONS, Filter

HELP = ('words describe the image; -word lowers images that match it; "exact phrase" must appear in a caption, '
        'file name or tag; filters: date:2019..2021 (or 2019, 2019-06, ..2020), folder:trips, camera:canon, '
        'orientation:portrait, file:IMG_12, tag:family (any field of your metadata file); -tag:work leaves out')
_FIELD = re.compile(r"^(-?)([A-Za-z][A-Za-z0-9_]{0,31}):(.*)$", re.S)
_DAY = re.compile(r"^(\d{4})(?:-(\d{1,2})(?:-(\d{1,2}))?)?$")


@dataclass(frozen=True)
class Query:
    """A parsed search: what to embed, what to push down, what to keep."""

    text: str  # the description to embed (words and phrases; NOT terms and filters removed)
    nots: tuple[str, ...] = ()  # NOT terms, each a word or phrase ("leash")
    phrases: tuple[str, ...] = ()  # exact phrases (also among `filters`, as field "phrase")
    filters: tuple[Filter, ...] = ()  # every metadata condition, phrases included
    source: str = ""  # the query as typed

    @property
    def plain(self) -> bool:
        """True when the query is only a description (no operator was used)."""
        return not (self.nots or self.filters)

    def chips(self) -> list[str]:
        """The active filters and NOT terms as short labels (the page's chips)."""
        return [f.label() for f in self.filters] + [f"-{n}" for n in self.nots]


def _literal_quote(text: str, j: int) -> bool:
    """The quote at `j` is text, not the start of a phrase: nothing closes it, or a space follows it (a quoted
    sign in a caption, `says " Teen Wolf "`, as Flickr's captions write them)."""
    return text.find('"', j + 1) < 0 or j + 1 >= len(text) or text[j + 1].isspace()


def _tokens(text: str) -> list[str]:
    """Split on spaces, keeping quoted parts (and `field:"a b"`) whole; a quote that opens no phrase
    (`_literal_quote`) is a character of its word."""
    out, i, n = [], 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        j = i
        while j < n and not text[j].isspace():
            if text[j] == '"' and not _literal_quote(text, j):
                j = text.find('"', j + 1) + 1
            else:
                j += 1
        out.append(text[i:j])
        i = j
    return out


def _unquote(s: str) -> str:
    return s[1:-1].strip() if len(s) >= 2 and s[0] == s[-1] == '"' else s


def _day_bounds(s: str, token: str) -> tuple[float, float]:
    """[first second, first second after] of a year, month or day written 2019, 2019-06 or 2019-06-14."""
    m = _DAY.match(s)
    if not m:
        raise QueryError(f"bad date in {token!r}: write 2019, 2019-06 or 2019-06-14, or a range 2019..2021")
    y, mo, d = int(m.group(1)), int(m.group(2) or 0), int(m.group(3) or 0)
    if not (1 <= (mo or 1) <= 12) or not (1 <= (d or 1) <= calendar.monthrange(y, mo or 1)[1]):
        raise QueryError(f"bad date in {token!r}: {s} is not a calendar date")
    start = calendar.timegm((y, mo or 1, d or 1, 0, 0, 0))
    if d:
        end = start + 86_400
    elif mo:
        end = calendar.timegm((y + (mo == 12), mo % 12 + 1, 1, 0, 0, 0))
    else:
        end = calendar.timegm((y + 1, 1, 1, 0, 0, 0))
    return float(start), float(end)


def parse_date(value: str, token: str) -> tuple[float | None, float | None]:
    """(lo, hi) seconds of `2019`, `2019..2021` (both years whole), `..2020`, `2020-03..`."""
    if ".." not in value:
        return _day_bounds(value, token)
    a, _, b = value.partition("..")
    if not a and not b:
        raise QueryError(f"bad date in {token!r}: give at least one end, e.g. date:2019.. or date:..2021")
    lo = _day_bounds(a, token)[0] if a else None
    hi = _day_bounds(b, token)[1] if b else None
    if lo is not None and hi is not None and hi <= lo:
        raise QueryError(f"bad date range {token!r}: it ends before it starts; write the earlier date first")
    return lo, hi


def _filter(neg: str, name: str, value: str, token: str) -> Filter:
    field, raw = name.lower(), value
    value = _unquote(value).strip()
    if not value:
        raise QueryError(f"empty value in {token!r}: write {field}:something")
    if field == "date":
        lo, hi = parse_date(value, token)
        return Filter("date", value, lo, hi, bool(neg), token)
    if field == "orientation" and value.lower() not in ORIENTATIONS:
        raise QueryError(f"bad orientation in {token!r}: use {', '.join(ORIENTATIONS)}")
    if field == "orientation":
        value = value.lower()
    del raw
    return Filter(field, value, negate=bool(neg), token=token)


def _is_phrase(body: str) -> bool:
    """`"a phrase"`: quoted whole, with no space just inside either quote."""
    return (len(body) > 2 and body[0] == body[-1] == '"' and '"' not in body[1:-1]
            and not body[1].isspace() and not body[-2].isspace())


def parse_query(text: str, *, filters_only: bool = False) -> Query:
    """The typed query of `text`. `filters_only`: every token must be a filter (the CLI's --where)."""
    text = text or ""
    words, nots, phrases, filters = [], [], [], []
    for tok in _tokens(text):
        m = _FIELD.match(tok)
        if m and m.group(3) and not m.group(3).startswith("//"):  # field:value (a URL's "http://" is text)
            filters.append(_filter(m.group(1), m.group(2), m.group(3), tok))
            continue
        if filters_only:
            raise QueryError(f"{tok!r} is not a filter: --where takes field:value filters only "
                             f"({', '.join(BUILT_IN)}, or a field of your metadata file); put words in --text")
        neg = tok.startswith("-") and len(tok) > 1
        body = tok[1:] if neg else tok
        phrase = " ".join(_unquote(body).split()) if _is_phrase(body) else ""
        if not phrase and '"' in tok:  # a quote that is text (`" Teen Wolf "`, `5" screen`, `""`): its words
            words.extend(w for w in tok.replace('"', " ").split() if w != "-")
            continue
        if phrase:
            filters.append(Filter("phrase", phrase, negate=neg, token=tok))  # -"a b": images without it
            if not neg:
                phrases.append(phrase)
                words.append(phrase)
            continue
        if neg:
            nots.append(body)
        elif tok != "-":
            words.append(tok)
    return Query(" ".join(words), tuple(nots), tuple(phrases), tuple(filters), text)


def parse_where(text: str) -> tuple[Filter, ...]:
    """Structured filters (the CLI's --where, the API's `where`): only field:value tokens."""
    return parse_query(text, filters_only=True).filters


# --- the page's filter row and chips: they edit the query's text, so one parser reads every filter ----------
ROW_FIELDS = ("date", "folder", "tag", "tags", "camera")  # the fields the page's filter row sets


def field_token(field: str, value: str) -> str:
    """`field:value`, the value quoted when it holds a space; QueryError for a value the language cannot hold."""
    value = " ".join(str(value or "").split())
    if '"' in value:
        raise QueryError(f"{field}:{value} cannot be a filter: its value holds a quote")
    return f'{field}:"{value}"' if " " in value else f"{field}:{value}"


def row_tokens(date_from: str = "", date_to: str = "", folder: str = "", tags=(), camera: str = "") -> list[str]:
    """The filters the page's filter row stands for, as the search box would hold them (`date:2019..2021`,
    `folder:trips`, `tag:family`, `camera:"canon eos"`), each checked by the parser."""
    a, b = str(date_from or "").strip(), str(date_to or "").strip()
    out = []
    if a or b:
        out.append("date:" + (a if a == b else f"{a}..{b}"))
    if str(folder or "").strip():
        out.append(field_token("folder", folder))
    out += [field_token("tag", t) for t in (tags or ()) if str(t).strip()]
    if str(camera or "").strip():
        out.append(field_token("camera", camera))
    parse_query(" ".join(out), filters_only=True)  # a bad date range says so, naming the token
    return out


def with_row_filters(text: str, tokens, fields=ROW_FIELDS) -> str:
    """`text` with its filters on `fields` (default: the row's, `ROW_FIELDS`) replaced by `tokens`; its words,
    NOT terms, phrases and other filters kept as typed (`-folder:x` too: the row sets positive filters)."""
    kept = [t for t in _tokens(text or "")
            if not ((m := _FIELD.match(t)) and m.group(3) and not m.group(1) and m.group(2).lower() in fields)]
    return " ".join([*kept, *tokens])


def without_token(text: str, token: str) -> str:
    """`text` without one of its tokens (a chip's label: a filter, a NOT term or a phrase)."""
    toks = _tokens(text or "")
    if token in toks:
        toks.remove(token)
    return " ".join(toks)
