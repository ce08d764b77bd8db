"""What the tuner sees of a job (TunerView), what it decides (TunerStep, TunerAct), and the figures both read: the
synchronous baseline, the window running now, the interval the documents' reasoning gives, eligibility."""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from airflow_async_stream.autotune.measure import Window, matches, measure
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.tuning import Tuning

__all__ = [
    "CHANGES",
    "TARGET_LOAD",
    "TunerAct",
    "TunerView",
    "TunerStep",
    "baseline",
    "configured",
    "current",
    "ineligible",
    "interval_for",
    "running",
    "spec_key",
]

#: The share of each second durable offset writes may keep busy at the interval the tuner sets.
TARGET_LOAD = 0.5
#: The most changes one trial makes: on, a higher interval, back off.
MAX_TRIAL_CHANGES = 3


class TunerAct(StrEnum):
    NOTHING = "nothing"  # settled: nothing to change
    WAIT = "wait"  # measuring, or too soon for another trial
    SKIP = "skip"  # not the tuner's to change now (pinned, not running, unhealthy)
    HELD = "held"  # another run or a person holds the job: looked at again later
    TRY = "try"  # async on, at an interval
    RETUNE = "retune"  # another interval
    SAMPLE = "sample"  # async off through the migration, to measure a synchronous baseline
    KEEP = "keep"  # the trial saved enough
    REVERT = "revert"  # async off through the migration
    ABORT = "abort"  # a person or a rollout changed the job during the trial: no change of the tuner's


#: The acts that change the job.
CHANGES = frozenset({TunerAct.TRY, TunerAct.RETUNE, TunerAct.SAMPLE, TunerAct.REVERT})


@dataclass(frozen=True)
class TunerView:
    """What the tuner sees of one job: the spec its driver runs, the running deployment and configuration, its
    recent progress events, its record, the time; ``blocked``: why it cannot be changed now (None: it can)."""

    spec: JobSpec
    deployment_id: str
    configuration: dict[str, Any]
    events: list[dict[str, Any]]
    tuning: Tuning
    now: float
    blocked: str | None = None
    #: The query running now (a switch in place starts a new one).
    query_run_id: str | None = None


@dataclass(frozen=True)
class TunerStep:
    """The decision: the act, why, the async options to set (for a change), the windows it judged by."""

    act: TunerAct
    reason: str
    to: dict[str, Any] | None = None
    before: Window | None = None
    after: Window | None = None
    saving: float | None = None
    #: A change that begins a trial (its kind) or continues the one under way.
    trial: str | None = None

    def record(self, look: TunerView) -> dict[str, Any]:
        return {
            "at": look.now,
            "act": str(self.act),
            "reason": self.reason,
            "from": look.configuration.get("async_progress"),
            "to": self.to,
            "before": self.before.to_json() if self.before else None,
            "after": self.after.to_json() if self.after else None,
            "saving": None if self.saving is None else round(self.saving, 3),
            "deployment_id": look.deployment_id,
        }


def spec_key(spec: JobSpec) -> str:
    """The spec without its async options: a revert holds until this changes."""
    mapping = {k: v for k, v in spec.to_mapping().items() if k not in ("async_progress", "autotune")}
    return hashlib.sha256(json.dumps(mapping, sort_keys=True).encode()).hexdigest()[:16]


def ineligible(spec: JobSpec, events: list[dict[str, Any]]) -> list[str]:
    """Why async progress tracking cannot run on this job: the spec's rules with it on, and state operators."""
    try:
        parse_spec(deep_merge(spec.to_mapping(), {"async_progress": {"enabled": True}}))
    except SpecError as exc:
        return [f"{field}: {reason}" for field, reason in exc.problems]
    if any(event.get("state_operators") for event in events):
        return ["its batches show state operators: async progress tracking works only on stateless queries"]
    return []


def interval_for(offset_management_ms: float, batches_per_s: float, bound_ms: float, at_least: int = 0) -> int:
    """The smallest interval (0, or a multiple of 100 ms; at least ``at_least``) at which durable offset
    writes keep busy at most TARGET_LOAD of each second, never above ``bound_ms``."""
    interval = 0
    if batches_per_s * offset_management_ms / 1000 > TARGET_LOAD:
        interval = math.ceil(offset_management_ms / TARGET_LOAD / 100) * 100
    return int(min(max(interval, at_least), bound_ms // 100 * 100))


def load(window: Window, interval_ms: int, durable_ms: float) -> float:
    """The share of each second durable offset writes keep busy: per write the synchronous cost."""
    writes_per_s = min(window.batches_per_s, 1000 / interval_ms) if interval_ms > 0 else window.batches_per_s
    return writes_per_s * durable_ms / 1000


def running(look: TunerView) -> dict[str, Any]:
    progress = look.configuration.get("async_progress") or {}
    return {"enabled": bool(progress.get("enabled")), "checkpoint_interval_ms": progress.get("checkpoint_interval_ms")}


def bound_ms(spec: JobSpec) -> float:
    return spec.autotune_settings.max_rerun_seconds * 1000


def baseline(look: TunerView) -> tuple[Window | None, int]:
    """The newest synchronous window of the running deployment and trigger: in the batches read, else the one
    the tuner recorded for them (a job async for hours has none left in its newest batches; sampling it again
    would take it through the migration twice for nothing)."""
    wanted = {"async_progress": {"enabled": False}, "trigger": look.configuration.get("trigger") or {}}
    n = look.spec.autotune_settings.measure_batches
    found, seen = measure(look.events, deployment_id=look.deployment_id, wanted=wanted, batches=n)
    return (found or recorded_baseline(look, wanted)), seen


def recorded_baseline(look: TunerView, wanted: dict[str, Any]) -> Window | None:
    """The newest synchronous window a decision on this deployment recorded, of the trigger running now."""
    for decision in reversed(look.tuning.decisions):
        window = decision.get("before")
        if decision.get("deployment_id") != look.deployment_id or not isinstance(window, dict):
            continue
        if matches(window.get("configuration"), wanted) and window.get("batches", 0) >= 2:
            try:
                return Window(**window)
            except TypeError:
                return None  # a record of another release's shape: measured again
    return None


def current(look: TunerView, since: float | None = None) -> tuple[Window | None, int]:
    """The newest window of the configuration running now (after ``since``)."""
    n = look.spec.autotune_settings.measure_batches
    return measure(look.events, deployment_id=look.deployment_id, wanted=look.configuration, batches=n, since=since)


def configured(look: TunerView, to: dict[str, Any] | None) -> dict[str, Any]:
    """The configuration the query runs with once ``to`` (async options) is set."""
    return {**look.configuration, "async_progress": dict(to or {})}
