"""How big a spec file may be, and what it may hold: a spec is a page of settings, written by whoever can open a
pull request on the desired folder, and read by every worker, a DAG's parse and the triggerer.

So before anything is built from it: at most ``MAX_BYTES``; no YAML aliases (a nine-level alias "billion laughs"
would expand to gigabytes, and a spec has nothing to repeat that a DAG's ``overrides`` cannot say); nesting at
most ``MAX_DEPTH`` deep; numbers finite and within 64 bits. Each refusal names the file and the field (or the
line), within milliseconds and without building what the file describes.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import yaml

__all__ = ["MAX_BYTES", "MAX_DEPTH", "MAX_NUMBER", "check_bounds", "yaml_problems"]

MAX_BYTES = 1_000_000
MAX_DEPTH = 32
MAX_NUMBER = 2**63 - 1
# libyaml when PyYAML has it: the pure-Python scanner looks up to 1,024 characters ahead at every flow bracket,
# which makes refusing a deeply nested file cost a fifth of a second instead of milliseconds.
_PARSER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def yaml_problems(text: str) -> list[tuple[str, str]]:
    """What a YAML spec must not hold, found from the parser's events alone (nothing is built): an alias, or
    nesting deeper than MAX_DEPTH (which would also exhaust the composer's stack)."""
    try:
        return _event_problems(yaml.parse(text, Loader=_PARSER))
    except yaml.MarkedYAMLError as exc:
        if "nesting depth" not in str(exc.problem):  # libyaml stops at 1,000 levels, before its first event
            raise
        return [(f"(line {exc.problem_mark.line + 1})", f"nests deeper than {MAX_DEPTH} levels")]


def _event_problems(events: Iterator[yaml.Event]) -> list[tuple[str, str]]:
    depth = 0
    for event in events:
        line = f"(line {event.start_mark.line + 1})" if event.start_mark else "(file)"
        if isinstance(event, yaml.AliasEvent):
            return [
                (line, f"uses the YAML alias *{event.anchor}: aliases are not allowed in a spec; write the value out")
            ]
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                return [(line, f"nests deeper than {MAX_DEPTH} levels")]
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return []


def check_bounds(data: Any, field: str = "", depth: int = 0) -> list[tuple[str, str]]:
    """Problems of parsed spec data: nesting past MAX_DEPTH, numbers not finite or past 64 bits."""
    where = field or "(spec)"
    if depth > MAX_DEPTH:
        return [(where, f"nests deeper than {MAX_DEPTH} levels")]
    if isinstance(data, dict):
        return [
            p
            for key, value in data.items()
            for p in check_bounds(value, f"{field}.{key}" if field else str(key), depth + 1)
        ]
    if isinstance(data, list):
        return [p for i, value in enumerate(data) for p in check_bounds(value, f"{field}[{i}]", depth + 1)]
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        return []
    if isinstance(data, float) and not math.isfinite(data):
        return [(where, "must be a finite number")]
    if abs(data) > MAX_NUMBER:
        return [(where, f"is a number past 64 bits ({len(str(int(data)))} digits)")]
    return []
