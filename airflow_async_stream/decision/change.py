"""What changed between two specs, field by field, and what of it Spark cannot restart from the checkpoint (a new
source identity, a stateful query's shape, a file sink's path). What a change needs is decided from these by
decision/needs.py.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_async_stream.decision.in_place import spec_part
from airflow_async_stream.spec.options import FILE_SINKS

__all__ = ["FILE_SINKS", "SOURCE_IDENTITY_OPTIONS", "changes_between", "refusals"]


#: Source options that say *what* is read: changing them leaves the checkpoint's offsets meaningless.
SOURCE_IDENTITY_OPTIONS = frozenset({"subscribe", "subscribepattern", "assign", "path", "kafka.bootstrap.servers"})


def _flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Leaf fields by dotted path; an empty mapping has no leaves (so ``{}`` and absent compare equal)."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_flatten(inner, f"{prefix}.{key}" if prefix else str(key)))
        return out
    return {prefix: value}


def changes_between(deployed: Mapping[str, Any], desired: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """Every leaf field that differs, as ``{"from": ..., "to": ...}`` (absent on one side is None)."""
    old, new = _flatten(deployed), _flatten(desired)
    return {
        key: {"from": old.get(key), "to": new.get(key)}
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    }


def _lower_keys(options: dict[str, Any] | None) -> dict[str, Any]:
    return {str(k).lower(): v for k, v in (options or {}).items()}


def refusals(deployed: Mapping[str, Any], desired: Mapping[str, Any]) -> list[str]:
    """Why Spark could not restart ``desired`` from the checkpoint ``deployed`` wrote (empty: it can)."""
    why = []
    if deployed.get("checkpoint") != desired.get("checkpoint"):
        why.append(
            "the checkpoint location changed: a new location starts the query over (offsets, commits and "
            "state stay behind); deploy it as a new job name and retire this one"
        )
    old_source, new_source = spec_part(deployed, "source", "format"), spec_part(desired, "source", "format")
    if old_source != new_source:
        why.append(f"the source changed ({old_source} -> {new_source}): Spark does not allow a different source")
    else:
        old_opts, new_opts = (
            _lower_keys(spec_part(deployed, "source", "options")),
            _lower_keys(spec_part(desired, "source", "options")),
        )
        for key in sorted(SOURCE_IDENTITY_OPTIONS):
            if old_opts.get(key) != new_opts.get(key):
                why.append(
                    f"source option {key} changed: what the query reads changed, and Spark's checkpointed "
                    "offsets would not match it"
                )
    old_sink, new_sink = (str(spec_part(s, "sink", "format") or "").lower() for s in (deployed, desired))
    if old_sink != new_sink and (new_sink in FILE_SINKS or (old_sink in FILE_SINKS and new_sink != "kafka")):
        why.append(
            f"the sink changed from {old_sink} to {new_sink}: Spark allows only a few sink changes "
            "(a file sink to Kafka, Kafka to foreach), never into a file sink"
        )
    if old_sink == new_sink and new_sink in FILE_SINKS:
        if _lower_keys(spec_part(deployed, "sink", "options")).get("path") != _lower_keys(
            spec_part(desired, "sink", "options")
        ).get("path"):
            why.append("the file sink's output directory changed: Spark does not allow it")
    stateful = bool(deployed.get("stateful") or desired.get("stateful"))
    if stateful and (deployed.get("transform") != desired.get("transform") or _stateful_changed(deployed, desired)):
        why.append(
            "the query is stateful and its operations changed: Spark does not allow changes to stateful "
            "operations (the state's schema must stay)"
        )
    return why


def _stateful_changed(deployed: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    return bool(deployed.get("stateful")) != bool(desired.get("stateful"))
