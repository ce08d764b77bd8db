"""A control-area record as typed data: JSON read field by field against the record's own annotations.

A record is written by the provider, but it sits on storage that many people and processes can write: every
field is checked where it is read (a bool is no number, a number is finite and fits 64 bits, a list holds what
it says), so a hand-written or damaged record is a ControlAreaError naming the file and the field, never a
TypeError later where the field is used. Keys this release does not know (a newer release's) are kept and
written back; a request (``STRICT``), which is acted on, refuses them.
"""

from __future__ import annotations

import math
import re
import types
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from functools import cache
from typing import Any, Self, Union, get_args, get_origin, get_type_hints

from airflow_async_stream.exceptions import ControlAreaError

__all__ = ["MAX_INT", "cut", "fits", "printable", "said"]

#: The largest number a record's integer field may hold (a fencing token, a pid, a batch id).
MAX_INT = 2**63 - 1


def fits(value: Any, hint: Any) -> bool:
    """Whether a JSON value is of a record field's type (strictly: a bool is no number, a number is finite)."""
    origin = get_origin(hint)
    if origin in (Union, types.UnionType):
        return any(fits(value, arg) for arg in get_args(hint))
    if hint is Any:
        return True
    if hint is type(None):
        return value is None
    if hint is bool:
        return isinstance(value, bool)
    if isinstance(value, bool):
        return False
    if hint is int:
        return isinstance(value, int) and abs(value) <= MAX_INT
    if hint is float:
        return isinstance(value, (int, float)) and abs(value) <= MAX_INT and math.isfinite(value)
    if hint is str:
        return isinstance(value, str)
    if isinstance(hint, type) and issubclass(hint, (StrEnum, Record)):
        # Which values of an enum: the record's check() says, naming them; a record within the record: its
        # own fields are checked as it is read (Record.from_json).
        return isinstance(value, str if issubclass(hint, StrEnum) else Mapping)
    if origin is list:
        return isinstance(value, list) and all(fits(item, get_args(hint)[0]) for item in value)
    if origin in (dict, Mapping):
        item = get_args(hint)[1]
        return isinstance(value, dict) and all(isinstance(k, str) and fits(v, item) for k, v in value.items())
    raise TypeError(f"records.py: no check for fields of type {hint}")


def said(hint: Any) -> str:
    """A field's type in words."""
    if get_origin(hint) in (Union, types.UnionType):
        return " or ".join(said(arg) for arg in get_args(hint))
    words = {str: "a string", int: "an integer", float: "a number", bool: "true or false", type(None): "null"}
    if hint in words:
        return words[hint]
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return "one of " + ", ".join(hint)
    if isinstance(hint, type) and issubclass(hint, Record):
        return "an object"
    plural = {str: " of strings", int: " of integers"}.get(get_args(hint)[-1], "") if get_args(hint) else ""
    return {list: "a list", dict: "an object", Mapping: "an object"}.get(get_origin(hint), str(hint)) + plural


def cut(text: str, most: int = 80) -> str:
    return text if len(text) <= most else text[: most - 3] + "..."


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_CONTROL_BUT_LINES = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str, lines: bool = False) -> str:
    """``text`` with control characters escaped (``\\n``, ``\\x1b``; with ``lines``, newlines and tabs kept): a
    record's value written into a log line or onto a terminal stays on its line and moves no cursor."""
    return (_CONTROL_BUT_LINES if lines else _CONTROL).sub(lambda found: repr(found.group())[1:-1], text)


@cache
def _hints(kind: type) -> dict[str, Any]:
    return get_type_hints(kind)


@dataclass(frozen=True, kw_only=True)
class Record:
    """A JSON record of the control area. Keys this release does not know (a newer release's) are kept in
    ``extra`` and written back; keys it knows but a record lacks (an older release's) read as their default."""

    extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)
    #: A request is acted on, so a key this release does not know is refused rather than kept.
    STRICT = False

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "record") -> Self:
        """The record ``data`` holds, every known field of its type (a hand-written or damaged record is a
        ControlAreaError naming the file and the field, never a TypeError later where a field is used)."""
        known = {f.name for f in fields(cls)} - {"extra"}
        if not isinstance(data, Mapping):
            raise ControlAreaError(f"{where} should hold a JSON object, found {type(data).__name__}")
        unknown = sorted(data.keys() - known)
        if cls.STRICT and unknown:
            raise ControlAreaError(f"{where}: unknown field {cut(repr(unknown[0]))}")
        kind: type = cls
        hints = _hints(kind)
        for name in known & data.keys():
            if not fits(data[name], hints[name]):
                raise ControlAreaError(
                    f"{where}: {name} should be {said(hints[name])}, found {type(data[name]).__name__} "
                    f"{cut(repr(data[name]))}"
                )
        values = {k: _nested(v, hints[k], f"{where}: {k}") for k, v in data.items() if k in known}
        record = cls(**values, extra={k: v for k, v in data.items() if k not in known})
        record.check(where)
        return record

    def check(self, where: str) -> None:
        """Raise ControlAreaError naming the file and field when a field the provider relies on is missing."""

    def to_json(self) -> dict[str, Any]:
        data = dict(self.extra)
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name != "extra":
                data[f.name] = value.to_json() if isinstance(value, Record) else value
        return data

    def but(self, **changes: Any) -> Self:
        """A copy with ``changes`` (records are immutable)."""
        return replace(self, **changes)


def _nested(value: Any, hint: Any, where: str) -> Any:
    """A field's value as read: a record within the record (a deployment's driver) becomes that record."""
    kinds = get_args(hint) if get_origin(hint) in (Union, types.UnionType) else (hint,)
    for kind in kinds:
        if isinstance(kind, type) and issubclass(kind, Record) and isinstance(value, Mapping):
            return kind.from_json(value, where)
    return value
