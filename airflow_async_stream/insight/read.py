"""A job's report read from where it lives: the progress log and records in its control area, the newest
batch in its checkpoint's ``offsets/``. Read-only: nothing here writes anything."""

from __future__ import annotations

import json
import time
from typing import Any

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.insight.advice import RerunLimits, advise
from airflow_async_stream.insight.report import Report, build_report
from airflow_async_stream.state import progress_log
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.tuning import read_tuning

__all__ = ["ADVISED", "change_advice", "job_report", "recorded_spec"]

#: How many of a job's newest batches a plan's advice reads (a few segments, whatever the log's size).
PLAN_BATCHES = 2000
#: The spec changes the report's advice speaks to.
ADVISED = ("async_progress.enabled", "async_progress.checkpoint_interval_ms")


def recorded_spec(control: ControlArea) -> dict[str, Any] | None:
    """The spec the job was last deployed or switched with (``spec.json``), or None before any deploy."""
    try:
        spec = json.loads(control.read_bytes(ControlArea.SPEC))
    except (FileNotFoundError, ValueError):
        return None
    return spec if isinstance(spec, dict) else None


def recent_events(control: ControlArea, at_least: int) -> list[dict[str, Any]]:
    """The newest events of the progress log: whole files read newest first until ``at_least`` are in."""
    chunks: list[list[dict[str, Any]]] = []
    count = 0
    for segment in reversed(progress_log.segments(control)):
        chunks.append(progress_log.read_events(control, [segment]))
        count += len(chunks[-1])
        if count >= at_least:
            break
    return [event for chunk in reversed(chunks) for event in chunk]


def job_report(
    control: ControlArea,
    checkpoint: str,
    since_s: float | None = None,
    limits: RerunLimits | None = None,
    recent: int | None = None,
) -> Report:
    """The report of one job, with its advice (of its newest ``recent`` batches or so, if given: a plan reads
    no more than that of each job). Events that carry no configuration (an application's driver builds its
    query itself) take the one ``deployment.json`` names for their deployment."""
    deployment = control.read_deployment()
    configurations = {}
    if deployment and deployment.async_progress:
        configurations[deployment.deployment_id] = {
            "async_progress": deployment.async_progress,
            "trigger": deployment.trigger,
        }
    spec = recorded_spec(control)
    inspection = inspect_checkpoint(checkpoint)
    report = build_report(
        control.read_progress() if recent is None else recent_events(control, recent),
        job=(spec or {}).get("name") or (deployment.job if deployment else None),
        checkpoint=checkpoint,
        since_s=since_s,
        now=time.time(),
        configurations=configurations,
        durable_offset=inspection.latest_offset,
    )
    report.advice = advise(report, spec, limits)
    report.autotune = read_tuning(control).summary()
    return report


def change_advice(control_url: str, checkpoint: str, diff: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """A planned change's advice: the job's, when the change turns async progress tracking on or changes its
    interval (else none). A progress log that cannot be read says so and never fails the plan: advice only
    informs."""
    turned_on = (diff.get(ADVISED[0]) or {}).get("to") is True
    if not turned_on and ADVISED[1] not in diff:
        return []
    try:
        return job_report(ControlArea(control_url), checkpoint, recent=PLAN_BATCHES).advice
    except (AsyncStreamError, OSError, ValueError) as exc:
        return [{"kind": "unavailable", "summary": f"no advice: the job's progress could not be read: {exc}"}]
