"""What a wanted spec needs of a job as observed, decided in this one place (the Flink Kubernetes Operator's
``DiffResult``/``DiffType``): nothing, a switch in place, a new driver, the safe-disable migration, or refused
(Spark cannot restart the changed query from its checkpoint); and how: in place by the running driver, or a
graceful stop and a new driver.

Checkpoint safety is part of it. Turning async progress tracking off while an async driver runs needs the
migration (the checkpoint cannot be judged while async writes it), unless ``gated``: the running driver judges
the stopped checkpoint itself before it starts synchronously. Where no driver runs, the checkpoint's verdict
decides: a synchronous spec over a checkpoint Spark cannot restart synchronously (async mode's gaps) needs the
migration, whatever the spec it ran before; over a safe one it is a plain synchronous start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_async_stream.decision.change import changes_between, refusals
from airflow_async_stream.decision.in_place import new_driver_reasons, spec_part
from airflow_async_stream.decision.observe import Observation
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import parse_spec

__all__ = ["CHECKPOINT", "Decision", "How", "Need", "decide"]

Reasons = tuple[tuple[str, str], ...]
#: The field a reason about the checkpoint's verdict names.
CHECKPOINT = "checkpoint"
Diff = dict[str, dict[str, Any]]


class Need(StrEnum):
    """What a wanted spec needs, from the least to the most."""

    NOTHING = "nothing"  # no field the query feels: an interval while async stays off, a suspend or resume
    SWITCH = "switch"  # the running driver starts its query again with the new options: about a second
    NEW_DRIVER = "new_driver"  # a driver starts: nothing runs, or a field set when the driver starts changed
    SAFE_DISABLE = "safe_disable"  # the migration: async at interval 0 until two commits, then synchronous
    REFUSED = "refused"  # Spark cannot restart the changed query from this checkpoint


class How(StrEnum):
    """How the need is met: the running driver switches in place, or a graceful stop and a new driver."""

    IN_PLACE = "in_place"
    RESTART = "restart"


@dataclass(frozen=True)
class Decision:
    """The need, how it is met and why so (``how_reason``), the fields the query would feel
    (``field -> {"from", "to"}``) and, for a new driver, the migration or a refusal, why (``(field, reason)``)."""

    need: Need
    how: How
    how_reason: str
    diff: dict[str, dict[str, Any]] = field(default_factory=dict)
    reasons: Reasons = ()

    @property
    def why(self) -> str:
        return _words(self.reasons)

    @property
    def in_place(self) -> bool:
        return self.how is How.IN_PLACE


def decide(observation: Observation, wanted: Mapping[str, Any], *, gated: bool = False) -> Decision:
    """What running ``wanted`` (a spec mapping) on the job ``observation`` saw needs (see the module docstring)."""
    reasons: Reasons = ()
    if observation.spec is None:
        need, diff = Need.NEW_DRIVER, changes_between({}, _felt(wanted))
    else:
        need, diff, reasons = _spec_need(observation.spec, wanted, gated)
    if need is not Need.REFUSED and not observation.live:
        need, reasons = _nothing_runs(observation, wanted, reasons)
    how, how_reason = _how(observation, wanted, need, reasons)
    return Decision(need, how, how_reason, diff, reasons)


def _spec_need(current: Mapping[str, Any], wanted: Mapping[str, Any], gated: bool) -> tuple[Need, Diff, Reasons]:
    """What going from ``current`` to ``wanted`` needs of a running driver, by the specs alone."""
    before, after = _felt(current), _felt(wanted)
    diff = changes_between(before, after)
    if not spec_part(before, "async_progress", "enabled") and not spec_part(after, "async_progress", "enabled"):
        diff.pop("async_progress.checkpoint_interval_ms", None)  # the interval of async that is off is unused
    if refused := refusals(before, after):
        return Need.REFUSED, diff, tuple(("", why) for why in refused)
    if not diff:
        return Need.NOTHING, diff, ()
    reasons = tuple(new_driver_reasons(before, after, gated))
    if any(name == "async_progress.enabled" for name, _ in reasons):
        return Need.SAFE_DISABLE, diff, reasons
    return (Need.NEW_DRIVER if reasons else Need.SWITCH), diff, reasons


def _nothing_runs(observation: Observation, wanted: Mapping[str, Any], reasons: Reasons) -> tuple[Need, Reasons]:
    """With no driver live every need is a new driver; a synchronous one only where the checkpoint is safe."""
    rest = tuple(reason for reason in reasons if reason[0] != "async_progress.enabled")
    if spec_part(wanted, "async_progress", "enabled") or observation.sync_restart_safe is not False:
        return Need.NEW_DRIVER, rest
    assert observation.checkpoint is not None
    return Need.SAFE_DISABLE, (*rest, (CHECKPOINT, observation.checkpoint.reason))


def _how(observation: Observation, wanted: Mapping[str, Any], need: Need, reasons: Reasons) -> tuple[How, str]:
    """In place where a driver runs that can switch to ``wanted`` (the migration's steps: gated), else a restart."""
    if not observation.live:
        return How.RESTART, f"no driver runs (state {observation.state})"
    if not observation.switchable:
        return How.RESTART, "its driver does not switch in place (an application's, or its query has not started)"
    try:
        parse_spec(observation.spec or {})
    except SpecError as exc:
        return How.RESTART, f"the deployed spec does not validate here: {exc}"
    if need is Need.SAFE_DISABLE:  # the migration's steps are switches the driver gates, where it can make them
        need, _, reasons = _spec_need(observation.spec or {}, wanted, gated=True)
    if need in (Need.NOTHING, Need.SWITCH):
        return How.IN_PLACE, "the running driver switches its query in place"
    return How.RESTART, f"needs a new driver: {_words(reasons)}"


def _words(reasons: Reasons) -> str:
    return "; ".join(f"{name}: {reason}" if name else reason for name, reason in reasons)


def _felt(spec: Mapping[str, Any]) -> dict[str, Any]:
    """A spec without its ``state``: suspending or resuming is no change of what runs."""
    return {key: value for key, value in spec.items() if key != "state"}
