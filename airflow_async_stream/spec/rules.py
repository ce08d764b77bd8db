"""The rules that span fields, refused before Spark would refuse them late: what Spark accepts with async
progress tracking here, the trigger's interval (intervals.py), the options Spark checks (options.py) and
real-time mode (realtime.py). SPARK_FACTS.md has the behaviour behind each rule."""

from __future__ import annotations

from typing import TYPE_CHECKING

from airflow_async_stream.spec.intervals import IntervalError
from airflow_async_stream.spec.options import option_violations
from airflow_async_stream.spec.realtime import REAL_TIME_RULES_READ_FROM, real_time_violations

if TYPE_CHECKING:
    from airflow_async_stream.spec.model import JobSpec

__all__ = ["ASYNC_SINKS", "RuleViolationError", "rule_violations"]

#: Sinks Spark allows with async progress tracking (by ``format`` name); only Kafka is a production sink.
ASYNC_SINKS = frozenset({"kafka", "console", "memory", "noop"})


class RuleViolationError(ValueError):
    """Cross-field rule failures, each with the field it concerns (carried through pydantic's error)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{f}: {r}" for f, r in problems))


def rule_violations(spec: JobSpec) -> list[tuple[str, str]]:
    """The rules that span fields, as ``(field, reason)``; empty when the spec is acceptable."""
    problems: list[tuple[str, str]] = []
    if spec.application is None:
        for field in ("source", "sink"):
            if getattr(spec, field) is None:
                problems.append((field, "is required unless `application` names your own PySpark file"))
    elif spec.source is not None or spec.transform is not None:
        problems.append(("application", "builds its own query: drop `source` and `transform`"))
    problems += option_violations(spec.source, spec.sink) + _trigger_violations(spec)
    if spec.async_progress.enabled:
        problems += _async_violations(spec)
    return problems


def _trigger_violations(spec: JobSpec) -> list[tuple[str, str]]:
    """The trigger's interval as Spark parses it, then (when it parses) real-time mode's rules."""
    try:
        spec.trigger.interval_ms()
    except IntervalError as exc:
        return [(f"trigger.{spec.trigger.kind}", str(exc))]
    return real_time_violations(spec)


def _async_violations(spec: JobSpec) -> list[tuple[str, str]]:
    """What Spark refuses, or silently ignores, with async progress tracking on."""
    problems: list[tuple[str, str]] = []
    kind = spec.trigger.kind
    if kind == "real_time":
        problems.append(
            (
                "trigger.real_time",
                f"Spark {REAL_TIME_RULES_READ_FROM} refuses async progress tracking in real-time mode "
                "(STREAMING_REAL_TIME_MODE.ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED, at start): turn "
                "async_progress.enabled off; a job running with it on moves by the safe-disable migration first",
            )
        )
    if kind in ("once", "available_now"):
        problems.append(
            (
                f"trigger.{kind}",
                f"async progress tracking cannot be used with the {kind} trigger "
                "(Spark fails the query at start); use processing_time or turn async_progress.enabled off",
            )
        )
    if kind == "continuous":
        problems.append(
            (
                "trigger.continuous",
                "Spark silently ignores async progress tracking with a continuous trigger; "
                "use processing_time or turn async_progress.enabled off",
            )
        )
    if spec.sink is not None and spec.sink.format.lower() not in ASYNC_SINKS:
        problems.append(
            (
                "sink.format",
                f"sink {spec.sink.format!r} does not support async progress tracking "
                f"(Spark allows only {', '.join(sorted(ASYNC_SINKS))})",
            )
        )
    if spec.delivery == "exactly_once":
        problems.append(
            (
                "delivery",
                "exactly_once and async progress tracking exclude each other: a failure re-runs the batches since "
                "the last durable checkpoint (up to the interval's worth); turn async_progress.enabled off or "
                "promise at_least_once",
            )
        )
    if spec.stateful:
        problems.append(
            (
                "stateful",
                "async progress tracking works only on stateless queries "
                "(Spark fails a stateful query at its first batch)",
            )
        )
    return problems
