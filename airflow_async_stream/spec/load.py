"""Reading a spec: from a mapping, a YAML or JSON file, or what a DAG author hands an operator; an error names
every bad field, and never echoes an option's value."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ValidationError

from airflow_async_stream.exceptions import RuleViolationError, SpecError
from airflow_async_stream.spec.bounds import MAX_BYTES, check_bounds, yaml_problems
from airflow_async_stream.spec.interpolation import expand_environment
from airflow_async_stream.spec.model import JobSpec

_M = TypeVar("_M", bound=BaseModel)

__all__ = [
    "SpecInput",
    "deep_merge",
    "is_templated",
    "load_spec",
    "parse_part",
    "parse_spec",
    "read_spec_file",
    "resolve_spec",
    "spec_operand",
]


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The model a field holds (``Trigger``, ``AsyncProgress | None``), or None for a mapping or a scalar."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return next((m for arg in get_args(annotation) if (m := _model_in(arg)) is not None), None)


def _nearest_key(root: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The field of the model at ``loc`` whose name is nearest the unknown key at its end, if one is near."""
    model: type[BaseModel] | None = root
    for part in loc[:-1]:
        fields = model.model_fields if model else {}
        field = fields.get(str(part)) or next((f for f in fields.values() if f.alias == part), None)
        model = _model_in(field.annotation) if field else None
    if model is None:
        return None
    names = [field.alias or name for name, field in model.model_fields.items()]
    near = difflib.get_close_matches(str(loc[-1]).lower(), names, n=1, cutoff=0.6)
    return near[0] if near else None


def _field_of(error: Any, root: type[BaseModel] = JobSpec) -> list[tuple[str, str]]:
    """Turn one pydantic error into ``(field, reason)`` pairs, keeping our rule fields."""
    ctx_error = (error.get("ctx") or {}).get("error")
    prefix = ".".join(str(p) for p in error["loc"])
    if isinstance(ctx_error, RuleViolationError):
        return [(f"{prefix}.{f}" if prefix else f, r) for f, r in ctx_error.problems]
    if isinstance(ctx_error, ValueError):
        return [(prefix or "(spec)", str(ctx_error))]
    reason = error["msg"]
    if error["type"] == "extra_forbidden":
        near = _nearest_key(root, tuple(error["loc"]))
        reason = (
            f"unknown key: did you mean `{near}`?"
            if near
            else "unknown key (check the spelling; unknown keys are refused)"
        )
    elif error["type"] == "missing":
        reason = "is required"
    elif _may_echo(error):
        shown = repr(error["input"])
        reason = f"{reason} (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    return [(prefix or "(spec)", reason)]


def _may_echo(error: Any) -> bool:
    """Echo a bad scalar back to the user, but never an option value: options may carry secrets."""
    loc = error["loc"]
    return (
        "input" in error
        and isinstance(error["input"], (str, int, float, bool))
        and not any(part in ("options", "spark_conf") for part in loc)
    )


def parse_spec(data: Any, source: str | None = None) -> JobSpec:
    """Validate a mapping (or a JobSpec) into a JobSpec, or raise SpecError naming each bad field."""
    if isinstance(data, JobSpec):
        return data
    if not isinstance(data, dict):
        raise SpecError([("(spec)", f"must be a mapping of fields, got {type(data).__name__}")], source)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        problems = [pair for err in exc.errors() for pair in _field_of(err)]
        raise SpecError(problems, source) from None


def parse_part(model: type[_M], spec: Mapping[str, Any], key: str, source: str | None = None) -> _M:
    """One block of a recorded spec (``restart``, ``health``, ...) as ``model`` (its defaults when absent), or
    SpecError naming the field (a hand-edited ``spec.json`` is an error, never the defaults)."""
    try:
        return model.model_validate(spec.get(key) or {})
    except ValidationError as exc:
        problems = [
            (f"{key}.{field}" if field != "(spec)" else key, reason)
            for err in exc.errors()
            for field, reason in _field_of(err, model)
        ]
        raise SpecError(problems, source) from None


def load_spec(path: str | Path) -> JobSpec:
    """Read a YAML or JSON spec file and validate it."""
    return parse_spec(read_spec_file(path), str(path))


def read_spec_file(path: str | Path) -> Any:
    """The data of a YAML or JSON spec file, its ``${VAR}`` references expanded (interpolation.py), not yet
    validated; SpecError when it cannot be read or parsed, or names a variable that is not set."""
    path = Path(path)
    try:
        size = path.stat().st_size
        if size > MAX_BYTES:
            raise SpecError([("(file)", f"is {size:,} bytes; a spec is at most {MAX_BYTES:,}")], str(path))
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([("(file)", f"cannot be read: {exc.strerror or exc}")], str(path)) from None
    except UnicodeDecodeError:
        raise SpecError([("(file)", "is not UTF-8 text")], str(path)) from None
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        problems = [] if kind == "JSON" else yaml_problems(text)
        data = None if problems else json.loads(text) if kind == "JSON" else yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, RecursionError) as exc:  # ValueError: also a number past Python's limit
        raise SpecError([("(file)", f"is not valid {kind}: {str(exc)[:300]}")], str(path)) from None
    problems = problems or ([] if data is None else check_bounds(data))
    if problems:
        raise SpecError(problems, str(path))
    if data is None:
        raise SpecError([("(file)", "is empty")], str(path))
    data, problems = expand_environment(data)
    if problems:
        raise SpecError(problems, str(path))
    return data


SpecInput = JobSpec | dict[str, Any] | str | Path


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` merged in key by key (nested mappings merge, other values replace)."""
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_spec(value: SpecInput, overrides: dict[str, Any] | None = None) -> JobSpec:
    """A JobSpec from what a DAG author gives: a JobSpec, a mapping, or a YAML/JSON file path.

    ``overrides`` are merged into the spec key by key (e.g. ``{"async_progress": {"enabled": False}}``)
    before validation, so the rules judge the spec that will actually run.
    """
    if isinstance(value, (str, Path)):
        spec = load_spec(value)
        source = str(value)
    elif isinstance(value, JobSpec):
        spec, source = value, None
    else:
        return parse_spec(deep_merge(value, overrides or {}) if isinstance(value, dict) else value)
    if not overrides:
        return spec
    return parse_spec(deep_merge(spec.to_mapping(), overrides), source)


def spec_operand(spec: SpecInput) -> Any:
    """What an operator stores for a spec argument: a mapping or a path string, so Airflow can template it."""
    if isinstance(spec, JobSpec):
        return spec.to_mapping()
    if isinstance(spec, Path):
        return str(spec)
    return spec


def is_templated(value: Any) -> bool:
    """True when a value still holds Jinja to be rendered at run time (so it cannot be judged at parse)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(is_templated(k) or is_templated(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_templated(v) for v in value)
    return False
