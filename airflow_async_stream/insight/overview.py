"""What a page of jobs shows: one row per job (state, liveness, async settings, restart verdict, last batch,
p50, offset-management share, the hold, the last change and its pause, the DAGs that touched it), and one job's
detail (the row, the report's advice, its latency series and changes).

A row reads a bounded amount of each job (its records, its checkpoint's listings and the newest
``TAIL_BYTES`` of its progress log), so a page of a thousand jobs stays fast whatever their logs' sizes; the
detail reads the whole log, as ``report`` does. Read-only. A job whose files cannot be read is a row with its
``error``, never an exception: one broken control area must not take the page down.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.insight.advice import RerunLimits
from airflow_async_stream.insight.batches import batch_window, ran_a_batch
from airflow_async_stream.insight.checkup import TAIL_BYTES, Checkup, look
from airflow_async_stream.insight.groups import describe
from airflow_async_stream.insight.health import DOWN, Verdict, restart_outlook
from airflow_async_stream.insight.history import dags, history, last_change, last_migration, summarized
from airflow_async_stream.insight.read import job_report, recorded_spec
from airflow_async_stream.insight.report import build_report
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import read_incidents
from airflow_async_stream.state.records import Deployment, Status
from airflow_async_stream.state.sources import Found

__all__ = ["SERIES", "TAIL_BYTES", "WORKERS", "hold_of", "job_detail", "job_row", "job_rows"]

_log = logging.getLogger(__name__)

#: The newest batches a job's latency series carries.
SERIES = 2000
#: The newest changes and incidents a job's answer carries (its size stays bounded whatever its log holds).
CHANGES = INCIDENTS = 200
#: How many rows are read at once.
WORKERS = 16

#: The fields of a row whose job could not be read (so every row has the same keys).
_BLANK: dict[str, Any] = dict.fromkeys(
    (
        "state",
        "health",
        "incident",
        "throughput",
        "live",
        "liveness",
        "configuration",
        "runs_with",
        "async",
        "restart",
        "last_batch",
        "p50_ms",
        "offset_management_share",
        "hold",
        "last_change",
        "migration",
        "switch",
        "dags",
        "stop_reason",
    ),
)


def _configuration(status: Status | None, deployment: Deployment | None) -> dict[str, Any] | None:
    """What the query runs with: the status record's (kept current by switches in place), else the deploy's."""
    if status and status.configuration:
        return status.configuration
    if deployment and deployment.async_progress:
        return {"async_progress": deployment.async_progress, "trigger": deployment.trigger}
    return None


def _open_incident(looked: Checkup) -> dict[str, Any] | None:
    """The newest incident of a job that is down or stalled: why, and the cure, for its row."""
    if looked.health.verdict not in DOWN | {Verdict.STALLED} or not looked.incidents:
        return None
    newest = looked.incidents[0]
    return {k: newest.to_json().get(k) for k in ("at", "kind", "error", "diagnosis", "cure")}


def _throughput(events: list[Mapping[str, Any]]) -> dict[str, float | None]:
    """Input and processed rows per second, the medians of the batches read (Spark's own figures)."""

    def median(key: str) -> float | None:
        values = sorted(float(e[key]) for e in events if ran_a_batch(e) and e.get(key) is not None)
        return round(values[len(values) // 2], 1) if values else None

    return {"input_rows_per_s": median("input_rows_per_s"), "processed_rows_per_s": median("processed_rows_per_s")}


def _async_on(configuration: dict[str, Any] | None, spec: dict[str, Any] | None) -> bool:
    """Whether the job runs (or, stopped, is specified) with async progress tracking on."""
    settings = (configuration or {}).get("async_progress") or (spec or {}).get("async_progress") or {}
    return bool(settings.get("enabled"))


def hold_of(control: ControlArea, at: float) -> dict[str, Any] | None:
    """Who holds the job at ``at``, for a reader; a hold that cannot be read is said to be one (it blocks every
    change until `stop --force` or `release --force` ends it), never taken for none."""
    try:
        hold = control.read_hold()
    except ControlAreaError as exc:
        return {
            "holder": "an unreadable hold",
            "purpose": str(exc),
            "dag_id": None,
            "expires_at": None,
            "unreadable": True,
        }
    if hold is None or hold.expires_at <= at:
        return None
    return {"holder": hold.holder, "purpose": hold.purpose, "dag_id": hold.dag_id, "expires_at": hold.expires_at}


def _last_batch(events: list[Mapping[str, Any]], at: float) -> dict[str, Any] | None:
    ran = [e for e in events if ran_a_batch(e)]
    if not ran:
        return None
    ended = batch_window(ran[-1])[1]
    return {"batch_id": ran[-1].get("batch_id"), "at": ended, "age_s": round(at - ended, 1)}


def _summary(found: Found, at: float) -> dict[str, Any]:
    control = ControlArea(found.control_area)
    spec = recorded_spec(control)
    looked = look(control, spec=spec or {}, at=at)
    status, deployment, events = looked.status, looked.deployment, list(looked.events)
    if spec is None and status is None and deployment is None and not control.exists():  # on S3 a LIST: asked last
        raise ControlAreaError(f"no control area at {found.control_area}")
    configuration = _configuration(status, deployment)
    inspection = inspect_checkpoint(found.checkpoint)
    safe = inspection.sync_restart_safe if inspection.exists else None
    report = build_report(
        events, configurations={deployment.deployment_id: configuration} if deployment and configuration else None
    )
    latest, managed = report.latest, report.offset_management()
    judged = looked.liveness
    hold = hold_of(control, at)
    switch = control.read_switch_account()
    runs = control.read_json(ControlArea.DAG_RUNS) or {}
    return {
        "name": (spec or {}).get("name") or (status and status.job) or (deployment and deployment.job) or found.name,
        "state": status.state if status else ("retired" if found.retired else "never deployed"),
        "health": looked.health.to_json(),
        "incident": _open_incident(looked),
        "throughput": _throughput(events),
        "live": judged.live,
        "liveness": judged.reason,
        "configuration": configuration,
        "runs_with": describe(configuration) if configuration else None,
        "async": (configuration or {}).get("async_progress"),
        "restart": {
            "sync_restart_safe": safe,
            "outlook": restart_outlook(safe, _async_on(configuration, spec), looked.health.verdict),
            "reason": inspection.reason,
        },
        "last_batch": _last_batch(events, at),
        "p50_ms": latest.figures()["p50_ms"] if latest else None,
        "offset_management_share": managed["share"] if managed else None,
        "hold": hold,
        "last_change": last_change(report, switch),
        "migration": last_migration(control, runs, report),
        "switch": {k: switch.to_json().get(k) for k in ("outcome", "pause_s", "started_at", "reason")}
        if switch
        else None,
        "dags": dags(control, runs, deployment, hold),
        "stop_reason": status.stop_reason if status else None,
    }


def job_row(found: Found, at: float | None = None) -> dict[str, Any]:
    """One job's row; ``error`` says why a job's files could not be read (the rest of the row is then empty)."""
    row = {
        "name": found.name,
        "checkpoint": found.checkpoint,
        "control_area": found.control_area,
        "source": found.source,
        "retired": found.retired,
        **_BLANK,
        "error": found.error,
    }
    if found.error:
        return row
    try:
        return {**row, **_summary(found, time.time() if at is None else at)}
    except Exception as exc:  # noqa: BLE001 - any unreadable file is this job's error, never the page's
        _log.warning("Job %s (%s): %s", found.name, found.control_area, exc)
        return {**row, "error": f"cannot be read: {type(exc).__name__}: {exc}"}


def job_rows(found: list[Found], workers: int = WORKERS) -> list[dict[str, Any]]:
    """Every job's row, in order. Rows on local disks are read one after another (reading them in threads
    was 2.3x slower here: the work is parsing, under one lock); rows on other storage ``workers`` at a time,
    where each is a dozen requests whose waits overlap."""
    remote = [
        i for i, job in enumerate(found) if "://" in job.control_area and not job.control_area.startswith("file://")
    ]
    far = set(remote)
    rows: list[dict[str, Any] | None] = [None if i in far else job_row(job) for i, job in enumerate(found)]
    if remote:
        with ThreadPoolExecutor(max_workers=max(1, workers), thread_name_prefix="job-row") as pool:
            for i, row in zip(remote, pool.map(job_row, [found[i] for i in remote]), strict=True):
                rows[i] = row
    return [row for row in rows if row is not None]


def job_detail(found: Found, limits: RerunLimits | None = None) -> dict[str, Any]:
    """One job's row with the report's figures and advice, its newest ``SERIES`` batches, ``CHANGES`` changes and
    ``INCIDENTS`` incidents."""
    row = job_row(found)
    if row["error"]:
        return {**row, "report": None, "advice": [], "series": [], "changes": [], "incidents": [], "history": []}
    try:
        report = job_report(ControlArea(found.control_area), found.checkpoint, limits=limits)
    except Exception as exc:  # noqa: BLE001 - as in job_row
        _log.warning("Job %s (%s): %s", found.name, found.control_area, exc)
        return {
            **row,
            "error": f"its report cannot be read: {type(exc).__name__}: {exc}",
            "report": None,
            "advice": [],
            "series": [],
            "changes": [],
            "incidents": [],
            "history": [],
        }
    data = report.to_json()
    series = [
        {
            "batch_id": b.batch_id,
            "start": b.start,
            "latency_ms": b.latency_ms,
            "offset_management_ms": b.offset_management_ms,
            "async": bool((b.configuration or {}).get("async_progress", {}).get("enabled")),
        }
        for b in report.batches[-SERIES:]
    ]
    figures = {
        k: data[k] for k in ("batches", "p50_ms", "p90_ms", "p99_ms", "rows_per_s", "baseline", "at_risk", "state")
    }
    changes = [summarized(change) for change in data["changes"][-CHANGES:]]
    incidents = [i.to_json() for i in read_incidents(ControlArea(found.control_area))[:INCIDENTS]]
    return {
        **row,
        "report": figures,
        "advice": data["advice"],
        "series": series,
        "changes": changes,
        "incidents": incidents,
        "autotune": data["autotune"],
        "history": history(changes, incidents, (data["autotune"] or {}).get("decisions") or []),
    }
