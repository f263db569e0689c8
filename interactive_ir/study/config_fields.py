"""Checks of one field of the study file: each returns the clean value or raises StudyConfigError naming it."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from typing import Any

from interactive_ir.study.config_types import ID_RE, StudyConfigError


def check_keys(d: Mapping, known: Sequence[str], where: str) -> None:
    for key in d:
        if key not in known:
            close = difflib.get_close_matches(str(key), known, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"known fields: {', '.join(known)}"
            raise StudyConfigError(f"{where + '.' if where else ''}{key}: unknown field; {hint}")


def text_field(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, Mapping)) or (isinstance(value, Sequence) and not isinstance(value, str)):
        raise StudyConfigError(f"{where}: expected text, got {value!r}")
    return str(value)


def id_field(value: Any, where: str) -> str:
    s = text_field(value, where).strip()
    if not ID_RE.match(s):
        raise StudyConfigError(f"{where}: {s!r} is not a valid id; use 1-64 letters, digits, '_', '.' or '-', "
                               "starting with a letter or digit")
    return s


def int_field(value: Any, where: str, lo: int, hi: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StudyConfigError(f"{where}: expected a whole number between {lo} and {hi}, got {value!r}")
    if not lo <= value <= hi:
        raise StudyConfigError(f"{where}: {value} is out of range; give a whole number between {lo} and {hi}")
    return value


def num_field(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise StudyConfigError(f"{where}: expected a number, got {value!r}")
    return float(value) if isinstance(value, float) else value


def bool_field(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise StudyConfigError(f"{where}: expected true or false, got {value!r}")
    return value


def choice_field(value: Any, where: str, options: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in options:
        close = difflib.get_close_matches(str(value), options, n=1)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        raise StudyConfigError(f"{where}: {value!r} is not one of {', '.join(options)}{hint}")
    return value
