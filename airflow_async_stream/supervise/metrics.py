"""Each job's figures for the monitoring people already run: computed by the watcher's sweep from the records it
reads anyway (status, the newest progress, the supervisor's record), sent through Airflow's metrics (StatsD or
OpenTelemetry, ``[metrics]``) by the watcher's trigger (triggers/health.py).

The names (README: Keeping jobs alive) are ``async_stream.job.<figure>``, with the job's name as the tag ``job``
where the backend has tags (OpenTelemetry, Datadog, StatsD with InfluxDB tags), and as part of the name where it
has not: ``async_stream.job.<job>.<figure>``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.insight.groups import percentile
from airflow_async_stream.insight.health import UP, Health, Verdict
from airflow_async_stream.state.records import Status

__all__ = ["GAUGES", "HEALTH_CODES", "INCIDENTS", "PREFIX", "Figures", "figures_of", "stat_name"]

PREFIX = "async_stream.job"
#: ``health``'s value per verdict: 0 is up and busy, the higher the worse; documented in the README.
HEALTH_CODES: Mapping[str, int] = {
    Verdict.HEALTHY: 0,
    Verdict.IDLE: 1,
    Verdict.LAGGING: 2,
    Verdict.STARTING: 3,
    Verdict.STOPPING: 4,
    Verdict.STOPPED: 5,
    Verdict.NOT_DEPLOYED: 6,
    Verdict.STALLED: 7,
    Verdict.FAILED_TO_START: 8,
    Verdict.CRASHED: 9,
}
#: The gauges, in the order they are sent.
GAUGES = (
    "health",
    "up",
    "seconds_since_last_batch",
    "batch_latency_p50_ms",
    "input_rows_per_second",
    "processed_rows_per_second",
    "restarts_in_window",
)
#: The counter: one per incident the watcher announces (crashed, failed_to_start, stalled), tagged by kind.
INCIDENTS = "incidents"
#: How many of the newest batches the latency's p50 is taken over.
LATENCY_BATCHES = 20


@dataclass(frozen=True)
class Figures:
    """One job's figures at one sweep (None: not known, not sent)."""

    job: str
    health: int
    up: int
    seconds_since_last_batch: float | None = None
    batch_latency_p50_ms: float | None = None
    input_rows_per_second: float | None = None
    processed_rows_per_second: float | None = None
    restarts_in_window: int | None = None

    def gauges(self) -> list[tuple[str, float]]:
        return [(name, float(value)) for name in GAUGES if (value := getattr(self, name)) is not None]


def figures_of(
    job: str,
    status: Status | None,
    health: Health,
    events: Sequence[Mapping[str, Any]],
    restarts: int | None,
    at: float,
) -> Figures:
    """The figures of ``job`` from its status, verdict, newest progress events (oldest first) and the restarts
    its policy's window holds."""
    verdict = health.verdict
    mine = [e for e in events if status is None or e.get("deployment_id") == status.deployment_id]
    latencies = [
        float(e["duration_ms"]["triggerExecution"])
        for e in mine[-LATENCY_BATCHES:]
        if isinstance(e.get("duration_ms"), Mapping) and "triggerExecution" in e["duration_ms"]
    ]
    newest = mine[-1] if mine else {}
    last = status.last_progress_at if status else None
    return Figures(
        job=job,
        health=HEALTH_CODES.get(verdict, max(HEALTH_CODES.values())),
        up=int(verdict in UP),
        seconds_since_last_batch=round(max(0.0, at - last), 3) if last else None,
        batch_latency_p50_ms=percentile(latencies, 50),
        input_rows_per_second=_number(newest.get("input_rows_per_s")),
        processed_rows_per_second=_number(newest.get("processed_rows_per_s")),
        restarts_in_window=restarts,
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def stat_name(figure: str, job: str, tagged: bool) -> str:
    """A figure's metric name: the job is a tag, or (a backend without tags) part of the name, its dots doubled
    to underscores as Airflow's own names do, so the name's parts stay countable."""
    if tagged:
        return f"{PREFIX}.{figure}"
    safe = "".join(c if c.isalnum() or c in "_-" else "_" for c in job.replace(".", "__"))
    return f"{PREFIX}.{safe}.{figure}"
