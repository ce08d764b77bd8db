"""Govern a running query: status with heartbeat, a progress log, graceful stops and in-place switches on request."""

from __future__ import annotations

import collections
import logging
import os
import socket
import threading
import traceback
from typing import TYPE_CHECKING, Any

from airflow_async_stream.decision.in_place import configuration_of
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.runtime.heartbeat import StatusWrites
from airflow_async_stream.runtime.listener import ProgressListener
from airflow_async_stream.runtime.progress import CONFIGURATIONS_KEPT, ProgressRecording
from airflow_async_stream.runtime.query import stop_between_batches
from airflow_async_stream.runtime.switch_request import refuse_unreadable
from airflow_async_stream.runtime.versions import is_interrupted_stop
from airflow_async_stream.spec.secret_options import Redactor
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import start_refusal
from airflow_async_stream.state.records import State, Status, now
from airflow_async_stream.state.requests import StopRequest, SwitchAccount, SwitchRequest

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

    from airflow_async_stream.lineage.running import RunningEvents
    from airflow_async_stream.spec.model import JobSpec

__all__ = ["Governor"]

_log = logging.getLogger(__name__)
#: How long a stop on SIGTERM waits for the running micro-batch.
_SIGTERM_GRACEFUL_TIMEOUT_S = 60.0


class Governor(StatusWrites, ProgressRecording):
    """Owns the status record of one deployment and the query it runs."""

    def __init__(self, control: ControlArea, deployment_id: str, job: str, redact: Redactor | None = None) -> None:
        self.control = control
        self.lineage: RunningEvents | None = None  # OpenLineage run, if the spec turns it on
        self.deployment_id = deployment_id
        self.redact = redact or Redactor()
        self._lock = threading.Lock()
        self._query_id: str | None = None
        self._query: StreamingQuery | None = None  # its trigger's status: trigger_facts
        #: Batches already recorded (listener and end-of-query flush both report them), the newest only.
        self._recorded: collections.OrderedDict[tuple[str, int], None] = collections.OrderedDict()
        self._status = Status(
            job=job,
            deployment_id=deployment_id,
            state=State.STARTING,
            host=socket.gethostname(),
            pid=os.getpid(),
            started_at=now(),
            heartbeat_at=now(),
        )
        #: The spec the query runs now (None for a bare writer), and what each query run was started with.
        self.spec: JobSpec | None = None
        self.configuration: dict[str, Any] | None = None
        self._configurations: collections.OrderedDict[str, dict[str, Any] | None] = collections.OrderedDict()
        #: The newest batch that ran, and a switch waiting for its first batch (to measure the pause).
        self.last_event: dict[str, Any] | None = None
        self._awaiting: tuple[SwitchAccount, dict[str, Any] | None] | None = None
        self._first_events: collections.OrderedDict[str, dict[str, Any]] = collections.OrderedDict()
        self._stop_heartbeat = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, name="async-stream-heartbeat", daemon=True)

    # -- status ---------------------------------------------------------------------------------------

    @property
    def query_restarts(self) -> list[float]:
        return list(self._status.query_restarts)

    @property
    def failed(self) -> bool:
        return self._status.state == State.FAILED

    def starting(self, **facts: Any) -> None:
        """First status write (``facts``: e.g. which options came from connections), then the heartbeat."""
        self._write(state=State.STARTING, **facts)
        self._heartbeat.start()

    def refused_start(self) -> bool:
        """True (final status written, saying why) when this deployment must not start its query: replaced,
        stopped, or its hold ended while it launched (fence.py). Asked at start and right before the query."""
        refusal = start_refusal(self.control, self.deployment_id)
        if refusal is None:
            return False
        _log.warning("deployment %s does not start its query: %s", self.deployment_id, refusal.reason)
        self._finish(refusal.state, stop_reason=refusal.reason)
        return True

    def fail(self, error: BaseException | str) -> None:
        text = error if isinstance(error, str) else "".join(traceback.format_exception_only(error)).strip()
        self._finish(State.FAILED, error=text)

    def _finish(self, state: str, **changes: Any) -> None:
        self._stop_heartbeat.set()
        self._write(state=state, finished_at=now(), **changes)
        _log.info(
            "deployment %s %s after %d micro-batches (last batch %s)",
            self.deployment_id,
            state,
            self._status.batches,
            self._status.last_batch_id,
        )
        if self.lineage is not None:
            self.lineage.ended(state, changes.get("error"))

    # -- the query ------------------------------------------------------------------------------------

    def run(self, writer: Any, spark: Any, spec: JobSpec | None = None, df: Any = None) -> None:
        """Start the query from a fully configured writer and govern it until it ends; with its ``spec``
        (and the DataFrame, to check a switch to async), switch requests switch it in place."""
        from airflow_async_stream.runtime.requery import govern_query
        from airflow_async_stream.runtime.switch import InPlaceSwitch
        from airflow_async_stream.runtime.switch_request import abandon_stale_request

        self.spec = spec
        self.configuration = configuration_of(spec) if spec else None
        abandon_stale_request(self.control, self.deployment_id, self.redact)
        if self.refused_start():  # the last moment before a micro-batch can run
            return
        listener = ProgressListener(self)
        spark.streams.addListener(listener)
        query = writer.start()
        self._started(query)
        _log.info("deployment %s: query %s started (run %s)", self.deployment_id, query.id, query.runId)
        try:
            switch = (lambda q, r: InPlaceSwitch(self, spark, writer, df).apply(q, r)) if spec else None
            govern_query(self, query, writer, switch)
        finally:
            self.flush_progress(self._query or query)
            spark.streams.removeListener(listener)
        self.finish_after(self._query or query)

    def _started(self, query: StreamingQuery, run_id: str | None = None, **changes: Any) -> None:
        """A query runs (``run_id``: read already). Each id is read once: a py4j call beside its first batch."""
        query_id, run_id = str(query.id), run_id or str(query.runId)
        self._query_id = query_id
        self._query = query
        if self.lineage is not None:
            self.lineage.started()  # START once: a switch continues the run
        with self._lock:
            self._configurations[run_id] = self.configuration
            while len(self._configurations) > CONFIGURATIONS_KEPT:
                self._configurations.popitem(last=False)
        self._write(
            state=State.RUNNING,
            query_id=query_id,
            query_run_id=run_id,
            configuration=self.configuration,
            **changes,
        )

    def requeried(self, query: StreamingQuery, at: float, keep: int) -> None:
        """A new query after a transient failure (runtime/requery.py), counted in ``query_restarts``."""
        self._started(query, query_restarts=[*self._status.query_restarts, at][-keep:])

    def switched(
        self,
        query: StreamingQuery,
        spec: JobSpec | None,
        last_before: dict[str, Any] | None,
        record: SwitchAccount | None,
    ) -> None:
        """A new query runs on the checkpoint: from ``spec`` after a switch (``record``), or the previous one
        again after a failed switch. Stability is judged afresh for a new spec."""
        changed = record is not None
        run_id = record.query_run_id if record is not None else None
        self._started(query, run_id, switches=self._status.switches + (1 if changed else 0))
        if record is not None and spec is not None:
            self.spec = spec
            if self.lineage is not None:
                self.lineage.switched(spec)
            start = last_before["batch_id"] if last_before else self._status.last_batch_id
            self.watch_stability(spec.checkpoint, start, spec.to_mapping())
            with self._lock:
                self._awaiting = (record, last_before)
            self._measure_pause()  # the first batch may already be recorded

    def watch(self, query: StreamingQuery, switchable: bool = False) -> SwitchRequest | None:
        """Govern until the query ends (None) or a switch request for this deployment arrives."""
        while query.isActive:
            request = self.stop_request()
            if request:
                self._stop_gracefully(query, request)
                return None
            switch = self._switch_request() if switchable else None
            if switch:
                return switch
            query.awaitTermination(self.request_poll_s)  # type: ignore[arg-type]  # PySpark takes seconds as a float too
        return None

    def stop_request(self) -> StopRequest | None:
        try:
            return self.control.stop_request_for(self.deployment_id)
        except ControlAreaError as exc:  # hand-written or damaged: never applied, and the query runs on
            refuse_unreadable(self.control, ControlArea.STOP_REQUEST, self.redact(str(exc)), self.deployment_id)
            return None

    def _switch_request(self) -> SwitchRequest | None:
        try:
            request = self.control.read_switch_request()
        except ControlAreaError as exc:  # likewise: refused in the switch's account
            refuse_unreadable(self.control, ControlArea.SWITCH_REQUEST, self.redact(str(exc)), self.deployment_id)
            return None
        return request if request and request.deployment_id == self.deployment_id else None

    def finish_after(self, query: StreamingQuery) -> None:
        """Write the final status from how the query ended."""
        error = query.exception()
        if error is not None and not (self._status.state == State.STOPPING and is_interrupted_stop(error)):
            self.fail(str(error))
        else:
            if error is not None:
                _log.info("the query ended as it was stopped: %s", self.redact(str(error).splitlines()[0]))
            self._finish(State.STOPPED)
            self.control.remove(ControlArea.STOP_REQUEST)

    def _stop_gracefully(self, query: StreamingQuery, request: StopRequest) -> None:
        """Stop between micro-batches on a stop request."""
        self._write(state=State.STOPPING, stop_reason=request.reason)
        _log.info("stop requested (%s): stopping between micro-batches", self.redact(str(request.reason)))
        forced = stop_between_batches(query, request.graceful_timeout_s)
        with self._lock:
            self._status = self._status.but(forced_stop=forced)

    def request_stop_from_signal(self) -> None:
        """SIGTERM to the driver is treated as a stop request for this deployment."""
        self.control.request_stop(self.deployment_id, "SIGTERM", _SIGTERM_GRACEFUL_TIMEOUT_S)
