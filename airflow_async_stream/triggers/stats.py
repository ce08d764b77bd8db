"""Send the watcher's figures (supervise/metrics.py) through Airflow's metrics, as the user's ``[metrics]``
settings configure them: StatsD, StatsD with Datadog or InfluxDB tags, or OpenTelemetry. Nothing is sent
when metrics are off."""

from __future__ import annotations

from airflow.configuration import conf
from airflow.observability import stats  # the triggerer's own: the SDK's copy is not the one it configures

from airflow_async_stream.supervise.metrics import INCIDENTS, Figures, stat_name
from airflow_async_stream.supervise.watch import Change

__all__ = ["INCIDENT_EVENTS", "has_tags", "send_change", "send_figures"]

#: The watcher's events that count as an incident.
INCIDENT_EVENTS = frozenset({"crashed", "failed_to_start", "stalled"})


def has_tags() -> bool:
    """Whether the configured backend carries tags (chosen in the order Airflow chooses its backend)."""
    if conf.getboolean("metrics", "statsd_datadog_enabled", fallback=False):
        return True
    if conf.getboolean("metrics", "statsd_on", fallback=False):
        return conf.getboolean("metrics", "statsd_influxdb_enabled", fallback=False)
    return conf.getboolean("metrics", "otel_on", fallback=False)


def send_figures(figures: Figures, tagged: bool) -> None:
    for figure, value in figures.gauges():
        stats.gauge(stat_name(figure, figures.job, tagged), value, tags={"job": figures.job} if tagged else None)


def send_change(change: Change, tagged: bool) -> None:
    """Count an incident the watcher announces (once: only the watcher that claimed the change sends it)."""
    if change.event in INCIDENT_EVENTS:
        tags = {"job": change.job, "kind": change.event} if tagged else None
        name = stat_name(INCIDENTS, change.job, tagged)
        stats.incr(name if tagged else f"{name}.{change.event}", tags=tags)
