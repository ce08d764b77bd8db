"""A running job's OpenLineage run, emitted by its driver: START when its query starts, RUNNING every N minutes
with what ran since the one before (micro-batches, rows, batch latency), COMPLETE or FAIL when it ends.

Events go out from one thread through the OpenLineage client's transport (Airflow's ``[openlineage] transport``
handed over at deploy, else the client's own configuration). A batch only adds to counters under a lock, so a
slow or failing transport never holds the query; failures are logged once per streak, and at most
``QUEUE_MAX`` events wait (the oldest are dropped, counted). What an event says passes the driver's redaction.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_async_stream.lineage.datasets import ServersOf, configuration, job_datasets
from airflow_async_stream.lineage.link import RunningSettings
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import Redactor

__all__ = ["QUEUE_MAX", "RunningEvents", "every_s", "running_events"]

_log = logging.getLogger(__name__)

#: Events waiting for the transport (a transport down for hours at 1 event a minute drops the oldest).
QUEUE_MAX = 64
#: Batch latencies kept for an interval's median (a 100 ms trigger makes 3,000 in 5 minutes).
LATENCIES_KEPT = 1024
#: How long the end of the run waits for its last events to go out.
DRAIN_S = 10.0
_END = object()


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat()


@dataclass
class Totals:
    """What ran since the last event: a counter per batch, and a capped sample of batch latencies."""

    since: float = field(default_factory=time.time)
    batches: int = 0
    rows: int = 0
    last_batch_id: int | None = None
    latencies: list[float] = field(default_factory=list)

    def add(self, record: dict[str, Any]) -> None:
        self.batches += 1
        self.rows += int(record.get("num_input_rows") or 0)
        self.last_batch_id = record.get("batch_id", self.last_batch_id)
        latency = (record.get("duration_ms") or {}).get("triggerExecution")
        if latency is not None:
            if len(self.latencies) >= LATENCIES_KEPT:
                self.latencies[self.batches % LATENCIES_KEPT] = float(latency)
            else:
                self.latencies.append(float(latency))

    def facet(self) -> dict[str, Any]:
        ordered = sorted(self.latencies)
        return {
            "batches": self.batches,
            "rows": self.rows,
            "latency_ms_p50": ordered[(len(ordered) - 1) // 2] if ordered else None,
            "latency_ms_max": ordered[-1] if ordered else None,
            "last_batch_id": self.last_batch_id,
            "since": _iso(self.since),
            "until": _iso(time.time()),
        }


class RunningEvents:
    """The run of one deployment; ``emit`` sends one event (the OpenLineage client's, by default)."""

    def __init__(
        self,
        spec: JobSpec,
        settings: RunningSettings,
        every_s: float,
        redact: Redactor,
        servers_of: ServersOf | None = None,
        emit: Callable[[Any], None] | None = None,
    ) -> None:
        from airflow_async_stream.lineage.events import new_run_id

        self.every_s = every_s
        self.run_id = new_run_id()
        self._settings = settings
        self._redact = redact
        self._job = {
            "namespace": settings.namespace or "default",
            "job_name": f"async-stream-{spec.name}",
            "run_id": self.run_id,
            "parent": settings.parent,
            "configuration": redact.json(configuration(spec)),
            "datasets": job_datasets(spec, servers_of),
        }
        self._emit = emit or _client_emit(settings.transport)
        self._lock = threading.Lock()
        self._totals = Totals()
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=QUEUE_MAX)
        self._dropped = 0
        self._failing = 0
        self.sent: dict[str, int] = {}
        self._thread = threading.Thread(target=self._send, name="async-stream-lineage", daemon=True)
        self._started = False

    # -- the driver's side: cheap, never blocks --------------------------------------------------------

    def started(self) -> None:
        """The query runs: START once, then RUNNING every ``every_s``."""
        if self._started:
            return
        self._started = True
        self._thread.start()
        self._put(self._event("START"))

    def switched(self, spec: JobSpec) -> None:
        """A switch in place: the run goes on, and its next events carry the new configuration."""
        self._job = {**self._job, "configuration": self._redact.json(configuration(spec))}

    def batch(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._totals.add(record)

    def ended(self, state: str, error: str | None = None) -> None:
        """COMPLETE (stopped) or FAIL (with the error), then wait up to ``DRAIN_S`` for the events to go out."""
        if not self._started:
            return
        ended = "FAIL" if state == "failed" else "COMPLETE"
        self._put(self._event(ended, progress=self._take(), error=self._redact(error) if error else None))
        self._put(_END)
        self._thread.join(DRAIN_S)
        if self._thread.is_alive():
            _log.warning("lineage: %d events not sent within %.0f s of the end", self._queue.qsize(), DRAIN_S)

    # -- the sending thread ----------------------------------------------------------------------------

    def _send(self) -> None:
        deadline = time.monotonic() + self.every_s
        while True:
            try:
                item = self._queue.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                deadline = time.monotonic() + self.every_s
                item = self._event("RUNNING", progress=self._take())
            if item is _END:
                return
            self._deliver(item)

    def _deliver(self, event: Any) -> None:
        try:
            self._emit(event)
        except Exception as exc:  # noqa: BLE001 - a transport's failure must never reach the query
            self._failing += 1
            if self._failing == 1:
                _log.warning(
                    "lineage: the OpenLineage transport failed (%s); the query runs on, and further failures "
                    "are not logged until an event goes out again",
                    self._redact(f"{type(exc).__name__}: {exc}")[:300],
                )
            return
        if self._failing:
            _log.info("lineage: events go out again after %d failed", self._failing)
            self._failing = 0
        kind = str(getattr(event.eventType, "value", event.eventType))
        self.sent[kind] = self.sent.get(kind, 0) + 1

    def _take(self) -> dict[str, Any]:
        with self._lock:
            totals, self._totals = self._totals, Totals()
        return totals.facet()

    def _event(self, state: str, progress: dict[str, Any] | None = None, error: str | None = None) -> Any:
        from airflow_async_stream.lineage.events import run_event

        return run_event(state, progress=progress, error=error, **self._job)

    def _put(self, item: Any) -> None:
        while True:
            try:
                self._queue.put_nowait(item)
                return
            except queue.Full:
                try:
                    self._queue.get_nowait()
                    self._dropped += 1
                    if self._dropped == 1:
                        _log.warning("lineage: the transport falls behind; the oldest waiting events are dropped")
                except queue.Empty:
                    pass


def _client_emit(transport: dict[str, Any] | None) -> Callable[[Any], None]:
    from openlineage.client import OpenLineageClient

    client = OpenLineageClient(config={"transport": transport}) if transport else OpenLineageClient()
    return client.emit


def every_s(spec: JobSpec, settings: RunningSettings | None) -> float:
    """Seconds between RUNNING events: the spec's setting, else the provider's; 0: none."""
    own = spec.lineage.running_every_minutes if spec.lineage else None
    minutes = own if own is not None else (settings.every_minutes if settings else None)
    return float(minutes or 0) * 60


def running_events(
    spec: JobSpec, settings: RunningSettings | None, redact: Redactor, servers_of: ServersOf | None = None
) -> RunningEvents | None:
    """The deployment's run, or None when its RUNNING events are off (or the OpenLineage client is missing:
    logged, and the job runs without them)."""
    seconds = every_s(spec, settings)
    if seconds <= 0:
        return None
    try:
        return RunningEvents(spec, settings or RunningSettings(), seconds, redact, servers_of)
    except ImportError as exc:
        _log.warning(
            "lineage: RUNNING events are on but the OpenLineage client is missing (%s): "
            'pip install "airflow-async-stream[openlineage]"',
            exc,
        )
        return None
    except Exception as exc:  # noqa: BLE001 - a transport configuration that fails never stops the job
        _log.warning(
            "lineage: RUNNING events are off, the OpenLineage client could not be built: %s",
            redact(f"{type(exc).__name__}: {exc}")[:300],
        )
        return None
