"""The status record's writes: at once on a change, and on a schedule with the heartbeat; with a write interval
(object stores: the spec's ``logs.control_write_interval_s``) one request per interval, the status or the
progress log's waiting lines, so a job costs at most 360 writes an hour at 10 s whatever its batch rate."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any

from airflow_async_stream.spec.secret_options import Redactor
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import HEARTBEAT_INTERVAL_S, Status, now

__all__ = ["StatusWrites"]

_log = logging.getLogger(__name__)

#: Requests (stop, switch) are read this often; with a write interval a fifth of it, at most every 2 s.
_STOP_POLL_S, _REQUEST_POLL_MAX_S = 0.25, 2.0
#: With a write interval, the status is written once this many intervals passed since it last was (else the
#: progress waiting): the heartbeat is never older than two intervals, health judged within three.
_STATUS_EVERY = 1.5


class StatusWrites:
    """The governor's writing side; the governor owns the state it reads and writes (declared here)."""

    control: ControlArea
    redact: Redactor
    _lock: threading.Lock
    _status: Status
    _stop_heartbeat: threading.Event
    #: How often records are written (object stores); 0: as they happen, the heartbeat every 2 s.
    write_interval_s: float = 0.0
    _status_written_at: float = 0.0
    #: What Spark says of the trigger now (progress.py).
    trigger_facts: Callable[[], dict[str, Any]]

    def _write(self, heartbeat: bool = False, **changes: Any) -> None:
        """Update and write the status record; writes are serialised so an older snapshot never lands last. With
        a write interval, a change (not a heartbeat) writes the progress waiting first: a reader of the status
        finds the batches it names (a store refusing that write leaves them waiting; the status is written)."""
        if not heartbeat and self.write_interval_s > 0:
            try:
                self.control.flush_progress()
            except Exception as exc:  # noqa: BLE001 - the lines wait on; the change, a final status, must be written
                _log.warning("progress lines wait for the next write: %s", self.redact(str(exc)))
        with self._lock:
            if heartbeat and self._stop_heartbeat.is_set():
                return  # the final status is written (or about to be): a heartbeat must not overwrite it
            files = self.control.progress_files()
            self._status = self._status.but(**changes, heartbeat_at=now(), updated_at=now(), progress_files=files)
            self.control.write_status(self._status, self.redact.json)
            self._status_written_at = now()

    def write_every(self, interval_s: float) -> None:
        """Write records at most once per ``interval_s`` (the spec's ``logs.control_write_interval_s``)."""
        self.write_interval_s = interval_s
        self.control.write_interval_s = interval_s
        with self._lock:
            self._status = self._status.but(write_interval_s=interval_s)

    def _beat(self) -> None:
        while not self._stop_heartbeat.wait(self.write_interval_s or HEARTBEAT_INTERVAL_S):
            try:
                self._tick()
            except Exception as exc:  # noqa: BLE001 - a store refusing one write (503, SlowDown): the next tick tries
                _log.warning("could not write to the control area at this heartbeat: %s", self.redact(str(exc)))

    def _tick(self) -> None:
        """One write: the status with its heartbeat, or, with a write interval, the progress waiting while the
        status is younger than 1.5 intervals (so the heartbeat is never older than two)."""
        facts = self.trigger_facts()
        interval = self.write_interval_s
        recent = now() - self._status_written_at < _STATUS_EVERY * interval
        if interval > 0 and recent and self.control.progress_waiting:
            self.control.flush_progress()
            with self._lock:
                self._status = self._status.but(**facts)
            return
        self._write(heartbeat=True, **facts)

    @property
    def request_poll_s(self) -> float:
        """How often stop and switch requests are read: 4 times a second, or a fifth of the write interval."""
        return min(max(_STOP_POLL_S, self.write_interval_s / 5), _REQUEST_POLL_MAX_S)
