"""Environment variables in spec files: ``${NAME}`` and ``${NAME:-default}``, as docker-compose writes them.

So one desired folder serves every environment (``checkpoint: ${ASYNC_STREAM_ROOT}/clicks``). Only string
values are expanded (never keys), after the YAML is parsed, so a value cannot change the file's structure.
A variable that is not set and has no default is an error naming the field: a spec never runs with an empty
piece of a path. ``$${`` writes a literal ``${``; a ``$`` not followed by ``{`` is left as it is.

A spec file is written by whoever can open a pull request on the desired folder, and read by workers whose
environment holds their own credentials: only the variables ``[async_stream] spec_variables`` allows are read
(names, and prefixes ending in ``*``; by default ``ASYNC_STREAM_*``). Naming any other is an error naming the
field and the variable, default or not; secrets come from Airflow connections, never from a spec.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.exceptions import SettingsError

__all__ = ["DEFAULT_ALLOWED", "SETTING", "Allowed", "expand_environment"]

_REFERENCE = re.compile(r"\$\$\{|\$\{(?P<body>[^}]*)\}")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
SETTING = "[async_stream] spec_variables"
DEFAULT_ALLOWED = "ASYNC_STREAM_*"


@dataclass(frozen=True)
class Allowed:
    """Which environment variables a spec may name: exact names, and prefixes (written ``PREFIX*``)."""

    patterns: tuple[str, ...]

    @classmethod
    def parse(cls, setting: str) -> Allowed:
        patterns = tuple(p.strip() for p in setting.split(",") if p.strip())
        for pattern in patterns:
            if not _NAME.fullmatch(pattern.removesuffix("*")):
                raise SettingsError(f"{SETTING}: {pattern!r} is neither a variable name nor a prefix ending in *")
        return cls(patterns)

    @classmethod
    def configured(cls) -> Allowed:
        """The setting as Airflow's configuration has it (``ASYNC_STREAM_*`` where Airflow is not installed);
        a setting that cannot be read raises SettingsError, never read as a default."""
        try:
            from airflow.configuration import conf
        except ModuleNotFoundError as exc:
            if exc.name != "airflow":
                raise SettingsError(f"{SETTING} cannot be read: {exc}") from exc
            return cls.parse(DEFAULT_ALLOWED)
        try:
            return cls.parse(conf.get("async_stream", "spec_variables", fallback=DEFAULT_ALLOWED))
        except SettingsError:
            raise
        except Exception as exc:  # noqa: BLE001 - a broken airflow.cfg, a failing *_cmd: said, never a default
            raise SettingsError(f"{SETTING} cannot be read: {type(exc).__name__}: {exc}") from exc

    def allows(self, name: str) -> bool:
        return any(name.startswith(p[:-1]) if p.endswith("*") else name == p for p in self.patterns)

    def __str__(self) -> str:
        return ", ".join(self.patterns) or "none"


def _references(data: Any) -> bool:
    if isinstance(data, dict):
        return any(_references(value) for value in data.values())
    if isinstance(data, list):
        return any(_references(value) for value in data)
    return isinstance(data, str) and "${" in data


def expand_environment(
    data: Any, environ: Mapping[str, str] | None = None, field: str = "", allowed: Allowed | None = None
) -> tuple[Any, list[tuple[str, str]]]:
    """``data`` with every reference in its string values replaced, and the problems as (field, reason)."""
    env = os.environ if environ is None else environ
    if allowed is None:  # the settings are read only for a file that names a variable (importing Airflow costs)
        allowed = Allowed.configured() if _references(data) else Allowed(())
    problems: list[tuple[str, str]] = []
    if isinstance(data, dict):
        out = {}
        for key, value in data.items():
            out[key], inner = expand_environment(value, env, f"{field}.{key}" if field else str(key), allowed)
            problems += inner
        return out, problems
    if isinstance(data, list):
        items = []
        for index, value in enumerate(data):
            item, inner = expand_environment(value, env, f"{field}[{index}]", allowed)
            items.append(item)
            problems += inner
        return items, problems
    if not isinstance(data, str) or "${" not in data:
        return data, problems
    return _expanded(data, env, allowed, field or "(file)")


def _expanded(text: str, env: Mapping[str, str], allowed: Allowed, field: str) -> tuple[str, list[tuple[str, str]]]:
    """One string value with its references replaced, and the problems of those that cannot be."""
    problems: list[tuple[str, str]] = []

    def replace(match: re.Match[str]) -> str:
        body = match["body"]
        if body is None:
            return "${"  # $${ is a literal ${
        name, has_default, default = body.partition(":-")
        if not _NAME.fullmatch(name):
            problems.append((field, f"${{{body}}} is not a variable reference: write ${{NAME}} or ${{NAME:-default}}"))
            return match[0]
        if not allowed.allows(name):
            reason = f"names the environment variable {name}, which {SETTING} does not allow (it allows: {allowed})"
            problems.append((field, reason))
            return match[0]
        value = env.get(name)
        if value or has_default:
            return value or default
        reason = f"names the environment variable {name}, which is not set or empty"
        problems.append((field, f"{reason} (write ${{{name}:-default}} for a default)"))
        return match[0]

    return _REFERENCE.sub(replace, text), problems
