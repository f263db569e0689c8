"""A query's filters (`filters.py`'s `Filter`) as one Milvus boolean expression over the scalar fields of an
exported collection (`milvus_schema.py`), matching the same images as the SQLite store's query:

    date:2019..2021 folder:trips camera:canon tag:family -orientation:portrait
    -> (date >= 1546300800.0 and date < 1640995200.0) and (k_folder == "trips" or k_folder like "trips/%"
       or k_folder like "%/trips" or k_folder like "%/trips/%") and (k_camera like "%canon%")
       and (array_contains(u_tags, "family")) and (not (k_shape == "portrait"))

Values are ASCII-lowercased (the `k_*` and `u_*` fields are stored so), LIKE's `%` and `_` are escaped inside
patterns (a backslash in a contained value matches any one character there: `like_escape` says why; equality
and `array_contains` match it exactly), and every value goes in as a double-quoted string literal with `\\`,
`"`, newline, tab and carriage return escaped (Milvus's parser reads no `\\u` escapes: other characters,
unicode included, go in as they are). A value Milvus cannot carry (NUL, a lone surrogate) is a QueryError.
A date filter on an image without a date is false, negated or not, as in SQL (Milvus's nulls do the same).
"""

from __future__ import annotations

from interactive_ir.errors import QueryError
from interactive_ir.index.filters import Filter, resolve_user_field
from interactive_ir.index.milvus_schema import USER_PREFIX, StoreFields, fold

_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r"}


def literal(s: str) -> str:
    """`s` as a Milvus string literal."""
    if "\x00" in s or any("\ud800" <= c <= "\udfff" for c in s):
        raise QueryError(f"the filter value {s[:40]!r} holds a character no Milvus string can (NUL or a lone surrogate)")
    return '"' + "".join(_ESCAPES.get(c, c) for c in s) + '"'


def like_escape(s: str) -> str:
    """`s` as a LIKE pattern matching it literally: `%` and `_` escaped. A backslash becomes `_` (any one
    character): an escaped backslash is read differently by Milvus versions (Milvus Lite 3.2 matches `%k\\\\s%`,
    k, an escaped backslash, s, to nothing; a parser that looks only at the character before a `%` reads
    `\\\\%` as an escaped `%`), so a pattern here holds no backslash but those escaping `%` and `_`."""
    return "".join("_" if c == "\\" else "\\" + c if c in "%_" else c for c in s)


def _contains(field: str, value: str) -> str:
    return f"{field} like {literal('%' + like_escape(fold(value)) + '%')}"


def condition(f: Filter, fields: StoreFields) -> str:
    """The Milvus expression of one filter (its negation applied)."""
    if f.field == "date":
        parts = ([f"date >= {float(f.lo)!r}"] if f.lo is not None else []) + \
                ([f"date < {float(f.hi)!r}"] if f.hi is not None else [])
        cond = " and ".join(parts) or "date is not null"
    elif f.field == "folder":
        e = fold(f.value.strip("/"))
        x = like_escape(e)
        cond = (f"k_folder == {literal(e)} or k_folder like {literal(x + '/%')} or "
                f"k_folder like {literal('%/' + x)} or k_folder like {literal('%/' + x + '/%')}")
    elif f.field == "camera":
        cond = _contains("k_camera", f.value)
    elif f.field == "orientation":
        cond = f"k_shape == {literal(f.value)}"
    elif f.field == "file":
        cond = _contains("k_path", f.value)
    elif f.field == "phrase":
        cond = _contains("k_text", f.value)
    else:
        try:
            name = resolve_user_field(fields.user, f)
        except QueryError:
            raise QueryError(f"{f.label()!r}: the Milvus collection holds no field {f.field!r} (its user fields: "
                             f"{', '.join(fields.user) or 'none'}); filter on one of those, or export the index "
                             "again if its metadata file gained the field") from None
        cond = f"array_contains({USER_PREFIX}{name}, {literal(fold(f.value))})"
    return f"not ({cond})" if f.negate else f"({cond})"


def expression(filters, fields: StoreFields) -> str:
    """Every filter's condition, joined by `and` ("" without filters)."""
    return " and ".join(condition(f, fields) for f in filters)
