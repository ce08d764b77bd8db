"""Advice on the checkpoint interval of a job with async progress tracking on: durable offset writes that
cannot keep up (a backlog that gives the benefit back), or more input than the user allows for a failure to
re-run (up to the interval's worth); and what a failure re-runs, in rows at the job's rate."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.insight.documents import SOURCES
from airflow_async_stream.insight.report import Report

__all__ = ["DEFAULT_INTERVAL_MS", "RerunLimits", "backlog", "interval_of", "rerun_cost", "rerun_limit"]

#: Durable offset writes busy at least this share of each second build a backlog (seed 004).
BACKLOG_LOAD = 0.8
#: Async batches at least this slow against synchronous ones have given the benefit back.
GIVEN_BACK = 0.9
DEFAULT_INTERVAL_MS = 1000


@dataclass(frozen=True)
class RerunLimits:
    """What the user accepts a failure to re-run (None: no limit)."""

    max_rerun_rows: int | None = None
    max_rerun_s: float | None = None


def interval_of(report: Report) -> int:
    configuration = (report.latest.configuration if report.latest else None) or {}
    return int((configuration.get("async_progress") or {}).get("checkpoint_interval_ms", DEFAULT_INTERVAL_MS))


def rerun_cost(rows_per_s: float | None, interval_ms: int) -> str:
    if interval_ms <= 0:
        return "little more than the batch in flight (every batch's offsets are written)"
    rows = f", about {rows_per_s * interval_ms / 1000:,.0f} rows at {rows_per_s:,.0f} rows/s" if rows_per_s else ""
    return f"up to {interval_ms} ms of input{rows}"


def backlog(report: Report, managed: dict[str, Any] | None) -> dict[str, Any] | None:
    """Offset writes that cannot keep up: predicted from their synchronous cost, or seen in the async batches."""
    latest = report.latest
    if latest is None or not managed:
        return None
    interval, figures = interval_of(report), latest.figures()
    span = figures["ended"] - figures["started"]
    batches_per_s = len(latest.batches) / span if span > 0 else 0.0
    writes_per_s = min(batches_per_s, 1000 / interval) if interval > 0 else batches_per_s
    load = writes_per_s * managed["offset_management_ms"] / 1000
    given_back = (figures["p50_ms"] or 0.0) >= GIVEN_BACK * managed["p50_ms"]
    if load < BACKLOG_LOAD and not given_back:
        return None
    suggested = max(100, math.ceil(2 * managed["offset_management_ms"] / 100) * 100)
    seen = (
        f"; async p50 {figures['p50_ms']:.0f} ms against synchronous {managed['p50_ms']:.0f} ms" if given_back else ""
    )
    return {
        "kind": "interval",
        "summary": f"raise the checkpoint interval to about {suggested} ms: {writes_per_s:.1f} durable offset writes "
        f"a second at p50 {managed['offset_management_ms']:.0f} ms each keep them busy {load:.0%} of the time, "
        f"so a backlog builds and gives the benefit back{seen}",
        "figures": {"interval_ms": interval, "writes_per_s": round(writes_per_s, 2), "load": round(load, 3)}
        | {"async_p50_ms": figures["p50_ms"], "sync_p50_ms": managed["p50_ms"], "suggested_interval_ms": suggested},
        "gives_up": f"a longer interval makes a failure re-run more input ({SOURCES['databricks']})",
        "how": f"`airflow-async-stream switch {report.named} --set async_progress.checkpoint_interval_ms={suggested}`",
    }


def rerun_limit(report: Report, limits: RerunLimits) -> dict[str, Any] | None:
    """The input a failure would re-run, at most the interval's worth, against the user's limit."""
    if report.latest is None or (limits.max_rerun_rows is None and limits.max_rerun_s is None):
        return None
    interval, rows_per_s = interval_of(report), report.latest.figures()["rows_per_s"] or 0.0
    allowed = []
    if limits.max_rerun_s is not None:
        allowed.append(limits.max_rerun_s * 1000)
    if limits.max_rerun_rows is not None and rows_per_s > 0:
        allowed.append(limits.max_rerun_rows / rows_per_s * 1000)
    if not allowed or interval <= min(allowed):
        return None
    suggested = int(min(allowed) // 100 * 100)
    return {
        "kind": "interval",
        "summary": f"lower the checkpoint interval to {suggested} ms: a failure re-runs {rerun_cost(rows_per_s, interval)}, "
        "over the limit you set",
        "figures": {
            "interval_ms": interval,
            "rows_per_s": rows_per_s,
            "rerun_rows": round(rows_per_s * interval / 1000),
        }
        | {
            "max_rerun_rows": limits.max_rerun_rows,
            "max_rerun_s": limits.max_rerun_s,
            "suggested_interval_ms": suggested,
        },
        "gives_up": f"more frequent durable offset writes: part of the latency saving ({SOURCES['subsecond']})",
        "how": f"`airflow-async-stream switch {report.named} --set async_progress.checkpoint_interval_ms={suggested}`",
    }
