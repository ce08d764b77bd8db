"""A measured window: the newest steady batches a job ran under one configuration (each batch id once, a query
start's first batch apart, as the report counts them), and the figures the tuner judges by."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from airflow_async_stream.insight.batches import ran_a_batch
from airflow_async_stream.insight.groups import Batch, percentile

__all__ = ["Window", "matches", "measure"]


@dataclass(frozen=True)
class Window:
    """``batches`` steady batches of one configuration, newest last."""

    configuration: dict[str, Any]
    batches: int
    first_batch: int
    last_batch: int
    p50_ms: float
    #: ``walCommit + commitOffsets`` at p50: durable offset management in a synchronous window, only the
    #: hand-off to the background thread in an async one.
    offset_management_ms: float
    batches_per_s: float
    rows_per_s: float | None
    started: float
    ended: float

    @property
    def share(self) -> float:
        """Offset management over latency, at p50 (meaningful for a synchronous window only)."""
        return self.offset_management_ms / self.p50_ms if self.p50_ms > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _same_trigger(configuration: Mapping[str, Any] | None, trigger: Mapping[str, Any] | None) -> bool:
    return ((configuration or {}).get("trigger") or {}) == (trigger or {})


def measure(
    events: Iterable[Mapping[str, Any]],
    *,
    deployment_id: str,
    wanted: Mapping[str, Any],
    batches: int,
    since: float | None = None,
) -> tuple[Window | None, int]:
    """The newest ``batches`` steady batches of ``deployment_id`` whose configuration matches ``wanted`` (a
    synchronous one: async off and the same trigger, whatever its unused interval), started at or after
    ``since``; None while fewer ran. Also how many there are so far."""
    chosen = [b for b in _batches(events, deployment_id, since) if matches(b.configuration, wanted)]
    last: dict[int, Batch] = {b.batch_id: b for b in chosen}
    first_of_run: dict[str, int] = {}
    for b in chosen:
        first_of_run.setdefault(b.query_run_id, b.batch_id)
    steady = [b for b in sorted(last.values(), key=lambda b: b.batch_id) if first_of_run[b.query_run_id] != b.batch_id]
    if len(steady) < batches:
        return None, len(steady)
    window = steady[-batches:]
    return _figures(window, wanted), len(steady)


def _batches(events: Iterable[Mapping[str, Any]], deployment_id: str, since: float | None) -> list[Batch]:
    out = []
    for event in events:
        if not ran_a_batch(event) or str(event.get("deployment_id")) != deployment_id:
            continue
        try:
            batch = Batch.of(event, None)
        except (KeyError, TypeError, ValueError):
            continue  # an event the report would skip too
        if since is None or batch.start >= since:
            out.append(batch)
    return out


def matches(configuration: Mapping[str, Any] | None, wanted: Mapping[str, Any]) -> bool:
    if configuration is None or not _same_trigger(configuration, wanted.get("trigger")):
        return False
    have, want = configuration.get("async_progress") or {}, wanted.get("async_progress") or {}
    if not want.get("enabled"):
        return not have.get("enabled")
    return bool(have.get("enabled")) and have.get("checkpoint_interval_ms") == want.get("checkpoint_interval_ms")


def _figures(window: list[Batch], wanted: Mapping[str, Any]) -> Window:
    first, last = window[0], window[-1]
    span = last.start - first.start
    rows = sum(b.rows for b in window[1:])
    return Window(
        configuration=dict(wanted),
        batches=len(window),
        first_batch=first.batch_id,
        last_batch=last.batch_id,
        p50_ms=percentile([b.latency_ms for b in window], 50) or 0.0,
        offset_management_ms=percentile([b.offset_management_ms for b in window], 50) or 0.0,
        batches_per_s=round((len(window) - 1) / span, 3) if span > 0 else 0.0,
        rows_per_s=round(rows / span, 1) if span > 0 else None,
        started=first.start,
        ended=last.start + last.latency_ms / 1000,
    )
