"""The rules that span fields, refused before Spark would refuse them late: what Spark accepts with async
progress tracking here, the trigger's interval (intervals.py), the options Spark checks (options.py) and
real-time mode (realtime.py). SPARK_FACTS.md has the behaviour behind each rule."""

from __future__ import annotations

from airflow_async_stream.spec.intervals import IntervalError
from airflow_async_stream.spec.options import option_violations
from airflow_async_stream.spec.realtime import real_time_violations
from airflow_async_stream.spec.versions import SparkLine, judged, judging
from airflow_async_stream.spec.whole import WholeSpec

__all__ = ["ASYNC_SINKS", "SINK_EVOLUTION", "rule_violations", "violations_on"]

#: Spark 4.2+'s setting whose ``true`` refuses async progress tracking.
SINK_EVOLUTION = "spark.sql.streaming.queryEvolution.enableSinkEvolution"

#: Sinks Spark allows with async progress tracking (by ``format`` name), the same on every line from 3.5 to 4.3
#: (4.3 adds ``ForeachSink``, which no spec ``format`` names); only Kafka is a production sink.
ASYNC_SINKS = frozenset({"kafka", "console", "memory", "noop"})


def rule_violations(spec: WholeSpec) -> list[tuple[str, str]]:
    """The rules that span fields, as ``(field, reason)``, for the Spark this context judges for
    (spec/versions.py); empty when the spec is acceptable."""
    line, version, _ = judged()
    problems: list[tuple[str, str]] = []
    if spec.application is None:
        for field in ("source", "sink"):
            if getattr(spec, field) is None:
                problems.append((field, "is required unless `application` names your own PySpark file"))
    elif spec.source is not None or spec.transform is not None:
        problems.append(("application", "builds its own query: drop `source` and `transform`"))
    problems += option_violations(spec.source, spec.sink) + _trigger_violations(spec, line, f"Spark {version}")
    if spec.async_progress.enabled:
        problems += _async_violations(spec, line, f"Spark {version}")
    return problems


def violations_on(spec: WholeSpec, version: str, why: str) -> list[tuple[str, str]]:
    """The rules ``spec`` breaks on Spark ``version`` (``why``: where that version came from)."""
    with judging(version, why):
        return rule_violations(spec)


def _trigger_violations(spec: WholeSpec, line: SparkLine, spark: str) -> list[tuple[str, str]]:
    """The trigger's interval as Spark parses it, then (when it parses) real-time mode's rules."""
    try:
        spec.trigger.interval_ms()
    except IntervalError as exc:
        return [(f"trigger.{spec.trigger.kind}", str(exc))]
    if spec.trigger.kind == "real_time" and line.real_time is None:
        return [("trigger.real_time", f"{spark} has no real-time mode in PySpark (trigger(realTime=...) is 4.2+)")]
    return real_time_violations(spec)


def _real_time_async(spec: WholeSpec, line: SparkLine, spark: str) -> list[tuple[str, str]]:
    """Async progress tracking in real-time mode: refused by 4.2, only at interval 0 (and on by default) in 4.3."""
    if line.real_time == "refuses_async":
        return [
            (
                "trigger.real_time",
                f"{spark} refuses async progress tracking in real-time mode "
                "(STREAMING_REAL_TIME_MODE.ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED, at start): turn "
                "async_progress.enabled off; a job running with it on moves by the safe-disable migration first",
            )
        ]
    if line.real_time == "async_at_interval_0" and spec.async_progress.checkpoint_interval_ms != 0:
        return [
            (
                "async_progress.checkpoint_interval_ms",
                f"{spark} runs real-time mode with async progress tracking only at interval 0 "
                "(STREAMING_REAL_TIME_MODE.ASYNC_PROGRESS_TRACKING_CHECKPOINTING_INTERVAL_NON_ZERO, at start)",
            )
        ]
    return []


def _async_violations(spec: WholeSpec, line: SparkLine, spark: str) -> list[tuple[str, str]]:
    """What Spark refuses, or silently ignores, with async progress tracking on."""
    problems: list[tuple[str, str]] = []
    kind = spec.trigger.kind
    if kind == "real_time":
        problems += _real_time_async(spec, line, spark)
    if line.sink_evolution and spec.spark_conf_strings().get(SINK_EVOLUTION, "").strip().lower() == "true":
        problems.append(
            (
                f"spark_conf.{SINK_EVOLUTION}",
                f"{spark} refuses sink evolution with async progress tracking "
                "(STREAMING_QUERY_EVOLUTION_ERROR.ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED, at start): set one of them off",
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
