"""What a change from the spec a job runs to another needs, decided in this one place (the Flink Kubernetes
Operator's ``DiffResult``/``DiffType``): nothing the query feels, a switch in place, a new driver, the
safe-disable migration, or refused (Spark cannot restart the changed query from its checkpoint: a new source
identity, a stateful query's shape, a file sink's path). The CLI's ``switch``, the planner and the migration
steps read it; whether a driver runs that could switch is theirs to add (with none, every change is a new driver).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_async_stream.spec.options import FILE_SINKS
from airflow_async_stream.switch.allowed import new_driver_reasons, spec_part

__all__ = [
    "FILE_SINKS",
    "SOURCE_IDENTITY_OPTIONS",
    "Change",
    "How",
    "Need",
    "change_of",
    "changes_between",
    "refusals",
]


class Need(StrEnum):
    """What a change needs, from the least to the most."""

    NOTHING = "nothing"  # no field the query feels: an interval while async stays off, a suspend or resume
    SWITCH = "switch"  # the running driver starts its query again with the new options: about a second
    NEW_DRIVER = "new_driver"  # set when the driver starts (source, sink, JVM settings, real-time mode)
    SAFE_DISABLE = "safe_disable"  # async progress tracking turned off: the migration, never a direct restart
    REFUSED = "refused"  # Spark cannot restart the changed query from this checkpoint


class How(StrEnum):
    """How a planned change is made: the running driver switches in place, or a graceful stop and a new one."""

    IN_PLACE = "in_place"
    RESTART = "restart"


@dataclass(frozen=True)
class Change:
    """A change's need, the fields the query would feel (``field -> {"from", "to"}``) and, for a new driver,
    the safe-disable migration or a refusal, why (``(field, reason)``)."""

    need: Need
    diff: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: tuple[tuple[str, str], ...] = ()

    @property
    def why(self) -> str:
        return "; ".join(f"{name}: {reason}" if name else reason for name, reason in self.reasons)


def change_of(current: Mapping[str, Any], new: Mapping[str, Any], require_sync_safe: bool = False) -> Change:
    """What going from ``current`` to ``new`` (spec mappings) needs; ``require_sync_safe``: turning async off
    is the migration's own gated step (a switch like any other), not a change that needs the migration."""
    before, after = _felt(current), _felt(new)
    diff = changes_between(before, after)
    if not spec_part(before, "async_progress", "enabled") and not spec_part(after, "async_progress", "enabled"):
        diff.pop("async_progress.checkpoint_interval_ms", None)  # the interval of async that is off is unused
    if refused := refusals(before, after):
        return Change(Need.REFUSED, diff, tuple(("", why) for why in refused))
    if not diff:
        return Change(Need.NOTHING)
    reasons = tuple(new_driver_reasons(before, after, require_sync_safe))
    if any(name == "async_progress.enabled" for name, _ in reasons):
        return Change(Need.SAFE_DISABLE, diff, reasons)
    return Change(Need.NEW_DRIVER if reasons else Need.SWITCH, diff, reasons)


def _felt(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A spec without its ``state``: suspending or resuming is no change of what runs."""
    return {key: value for key, value in spec.items() if key != "state"}


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
