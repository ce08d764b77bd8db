"""Environment variables in spec files: ``${NAME}`` and ``${NAME:-default}``, as docker-compose writes them.

So one desired folder serves every environment (``checkpoint: ${CHECKPOINT_ROOT}/clicks``). Only string
values are expanded (never keys), after the YAML is parsed, so a value cannot change the file's structure.
A variable that is not set and has no default is an error naming the field: a spec never runs with an empty
piece of a path. ``$${`` writes a literal ``${``; a ``$`` not followed by ``{`` is left as it is.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["expand_environment"]

_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def expand_environment(
    data: Any, environ: Mapping[str, str] | None = None, field: str = ""
) -> tuple[Any, list[tuple[str, str]]]:
    """``data`` with every reference in its string values replaced, and the problems as (field, reason)."""
    env = os.environ if environ is None else environ
    problems: list[tuple[str, str]] = []
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            out[key], inner = expand_environment(value, env, f"{field}.{key}" if field else str(key))
            problems += inner
        return out, problems
    if isinstance(data, list):
        items = []
        for index, value in enumerate(data):
            item, inner = expand_environment(value, env, f"{field}[{index}]")
            items.append(item)
            problems += inner
        return items, problems
    if not isinstance(data, str) or "${" not in data:
        return data, problems

    def replace(match: re.Match[str]) -> str:
        body = match["body"]
        if body is None:
            return "${"  # $${ is a literal ${
        name, has_default, default = body.partition(":-")
        if not _NAME.fullmatch(name):
            reason = f"${{{body}}} is not a variable reference: write ${{NAME}} or ${{NAME:-default}}"
            problems.append((field or "(file)", reason))
            return match[0]
        value = env.get(name)
        if value:
            return value
        if has_default:
            return default
        reason = f"names the environment variable {name}, which is not set or empty"
        problems.append((field or "(file)", f"{reason} (write ${{{name}:-default}} for a default)"))
        return match[0]

    return _REFERENCE.sub(replace, data), problems
