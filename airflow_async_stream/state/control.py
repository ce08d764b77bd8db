"""The control area: our files beside a job's checkpoint (never inside Spark's ``offsets/`` or ``commits/``).

Layout of ``<checkpoint>.async-stream/``:

``spec.json``          the validated spec the latest deploy submitted
``deployment.json``    the deployment record (who deployed what, where the driver runs)
``status.json``        the driver's status record with heartbeat, rewritten atomically
``progress/``          one JSON line per micro-batch, in segment files with a retention (progress_log.py)
``stop-request.json``  present while a graceful stop is requested for one deployment
``switch-request.json`` present while an in-place switch of one deployment's query is requested
``switch.json``        what the driver did with the latest such request, step by step (switch/request.py)
``driver.log``         spark-submit's output on the launching host, rotated (driver/log.py)
``stable.json``        the last spec that ran stably: its deployment committed 2 batches after its start
``hold.json``          the job's hold: who may change it now (``.hold.lock``: its local guard; hold.py)
``revoked-holds.json`` holders a forced stop ended (the newest 32): they change the job no more
``fence.json``         the newest hold's fencing token, a number that only grows (fence.py)
``rollout.json``       the latest rollout step's outcome for this job
``safe-disable.json``  which step of a safe-disable run failed and why, for its rollback's message
``driver-exit.json``   the newest driver exit its launching host saw (driver/exits.py)
``incidents.jsonl``    crashes, failed starts and changes, stalls and recoveries, one JSON line each (incidents.py)
``stopped.json``       a stop on purpose: a person's, or its file's suspend (stopped.py)
``supervision.json``   the supervisor's restarts; ``watch.json``: the health its watcher last saw (supervise/)
``autotune.json``      the tuner's trial under way and its decisions (tuning.py)

Both the driver and Airflow reach it through fsspec, so it works wherever the checkpoint lives.
"""

from __future__ import annotations

import json
import posixpath
import socket
import time
from collections.abc import Callable
from typing import Any, TypeVar

from fsspec.implementations.local import LocalFileSystem

from airflow_async_stream.state import progress_log
from airflow_async_stream.state.progress_log import Retention
from airflow_async_stream.state.progress_writer import ProgressWriter
from airflow_async_stream.state.records import SUFFIX, Deployment, DriverExit, Hold, Status, now
from airflow_async_stream.state.requests import StopRequest, SwitchAccount, SwitchRequest
from airflow_async_stream.state.storage import (
    RECORD_BYTES,
    make_folder,
    open_url,
    read_file,
    read_json_object,
    replace_file,
)
from airflow_async_stream.state.typed import Record

__all__ = ["ControlArea", "control_url_for"]


_R = TypeVar("_R", bound=Record)


#: The most of ``incidents.jsonl`` and of a driver log that is read (their newest end: readers read tails).
INCIDENT_BYTES, LOG_TAIL_BYTES = 4 << 20, 1 << 20


def control_url_for(checkpoint: str) -> str:
    """The control area of a checkpoint: a sibling folder named ``<checkpoint>.async-stream``."""
    return checkpoint.rstrip("/") + SUFFIX


class ControlArea:
    """Files of one job's control area, reached through fsspec."""

    SPEC = "spec.json"
    DEPLOYMENT = "deployment.json"
    STATUS = "status.json"
    STOP_REQUEST = "stop-request.json"
    SWITCH_REQUEST = "switch-request.json"
    SWITCH_ACCOUNT = "switch.json"
    DRIVER_LOG = "driver.log"
    STABLE = "stable.json"
    ROLLOUT = "rollout.json"
    MIGRATION = "safe-disable.json"
    HOLD = "hold.json"
    REVOKED_HOLDS = "revoked-holds.json"
    DAG_RUNS = "dag-runs.json"  # the DAG run that last took the hold, per kind of change (hold.py)
    FENCE = "fence.json"
    DRIVER_EXIT = "driver-exit.json"
    INCIDENTS = "incidents.jsonl"
    STOPPED = "stopped.json"
    SUPERVISION = "supervision.json"
    WATCH = "watch.json"
    HOLD_GUARD = ".hold.lock"  # the hold's local guard (hold.py)
    PROGRESS = "progress"

    #: Protocols whose files can be appended to; on others (s3, gs, abfs, memory...) segments are rewritten whole.
    APPENDABLE = frozenset({"file", "local", "hdfs", "viewfs"})

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root = open_url(self.url)
        #: The progress log's limits, for the writer of this process's deployment (the driver sets the spec's).
        self.progress_retention = Retention()
        #: How often the driver writes its records here (seconds); 0: each as it happens (records.py).
        self.write_interval_s = 0.0
        self._progress: ProgressWriter | None = None

    @classmethod
    def for_checkpoint(cls, checkpoint: str) -> ControlArea:
        return cls(control_url_for(checkpoint))

    @property
    def is_local(self) -> bool:
        return isinstance(self.fs, LocalFileSystem)

    def path(self, name: str) -> str:
        return posixpath.join(self.root, name)

    def exists(self) -> bool:
        return bool(self.fs.exists(self.root))

    def ensure(self) -> None:
        make_folder(self.fs, self.root)

    # -- JSON records ---------------------------------------------------------------------------------

    def read_json(self, name: str) -> dict[str, Any] | None:
        """A JSON record, or None when the file does not exist."""
        return read_json_object(self.fs, self.path(name), f"{self.url}/{name}")

    def write_json(self, name: str, data: dict[str, Any]) -> None:
        """Replace a record atomically, so a reader never sees half a file."""
        self.write_bytes(name, json.dumps(data, indent=2, sort_keys=True).encode())

    def read_status(self) -> Status | None:
        return self._read_record(self.STATUS, Status)

    def write_status(self, status: Status, scrub: Callable[[Any], Any] | None = None) -> None:
        """Replace the status record; ``scrub`` (the driver's redactor) masks secrets in its text first."""
        data = status.to_json()
        self.write_json(self.STATUS, scrub(data) if scrub else data)

    def read_deployment(self) -> Deployment | None:
        return self._read_record(self.DEPLOYMENT, Deployment)

    def write_deployment(self, deployment: Deployment) -> None:
        self.write_json(self.DEPLOYMENT, deployment.to_json())

    def read_hold(self) -> Hold | None:
        return self._read_record(self.HOLD, Hold)

    def write_hold(self, hold: Hold) -> None:
        self.write_json(self.HOLD, hold.to_json())

    def read_switch_request(self) -> SwitchRequest | None:
        return self._read_record(self.SWITCH_REQUEST, SwitchRequest)

    def read_switch_account(self) -> SwitchAccount | None:
        return self._read_record(self.SWITCH_ACCOUNT, SwitchAccount)

    def write_switch_request(self, request: SwitchRequest) -> None:
        self.write_json(self.SWITCH_REQUEST, request.to_json())

    def write_switch_account(self, record: SwitchAccount, scrub: Callable[[Any], Any] | None = None) -> None:
        """Replace the switch's account; ``scrub`` (the driver's redactor) masks secrets in its text first."""
        data = record.to_json()
        self.write_json(self.SWITCH_ACCOUNT, scrub(data) if scrub else data)

    def _read_record(self, name: str, kind: type[_R]) -> _R | None:
        data = self.read_json(name)
        return None if data is None else kind.from_json(data, f"{self.url}/{name}")

    def read_bytes(self, name: str, start: int | None = None) -> bytes:
        """A file's bytes (from ``start``, from the end when negative), at most what its kind may hold
        (a record 1 MiB; ``INCIDENT_BYTES``, ``LOG_TAIL_BYTES``); FileNotFoundError when there is none."""
        kind = INCIDENT_BYTES if name == self.INCIDENTS else LOG_TAIL_BYTES if name.startswith(self.DRIVER_LOG) else 0
        return read_file(self.fs, self.path(name), start, kind or RECORD_BYTES)

    def write_bytes(self, name: str, payload: bytes) -> None:
        """Replace a file atomically (temp file and rename locally; a single put on object stores)."""
        replace_file(self.fs, self.path(name), payload)

    def set_aside(self, name: str) -> str:
        """Move an unreadable record (a folder where the file should be, garbage) out of the way, never deleting
        it: ``<name>.unreadable-<time>``; that name."""
        aside = f"{name}.unreadable-{time.strftime('%Y%m%dT%H%M%S')}"
        self.fs.mv(self.path(name), self.path(aside), recursive=True)
        return aside

    def remove(self, name: str) -> None:
        try:
            self.fs.rm_file(self.path(name))
        except FileNotFoundError:
            pass

    def read_exit(self, deployment_id: str) -> DriverExit | None:
        """The exit record of ``deployment_id``'s driver, if the host that launched it has written one."""
        record = self._read_record(self.DRIVER_EXIT, DriverExit)
        return record if record and record.deployment_id == deployment_id else None

    # -- progress log ---------------------------------------------------------------------------------

    @property
    def appendable(self) -> bool:
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        return bool(self.APPENDABLE & set(protocols))

    def append_progress(self, event: dict[str, Any]) -> None:
        """Add one event to the progress log as its deployment's writer (see progress_log.py)."""
        deployment = str(event.get("deployment_id") or "unknown")
        if self._progress is None or self._progress.deployment_id != deployment:
            self.flush_progress()
            buffered = self.write_interval_s > 0
            self._progress = ProgressWriter(self, deployment, self.progress_retention, buffered)
        self._progress.append(event)

    def flush_progress(self) -> bool:
        """Write the progress lines waiting in memory (with a write interval); False when none waited."""
        return self._progress.flush() if self._progress is not None else False

    def progress_files(self) -> list[dict[str, Any]]:
        """The newest two progress segments this process wrote, with their sizes (the status carries them)."""
        written = self._progress.written if self._progress is not None else []
        return [{"name": name, "bytes": size} for name, size in written]

    @property
    def progress_waiting(self) -> int:
        """Progress lines waiting in memory for the next write."""
        return self._progress.pending if self._progress is not None else 0

    def read_progress(self, deployment_id: str | None = None) -> list[dict[str, Any]]:
        """Progress events in the order written, optionally only one deployment's; a torn last line is skipped."""
        events = progress_log.read_events(self, progress_log.files_of(progress_log.segments(self), deployment_id))
        return [e for e in events if deployment_id is None or e.get("deployment_id") == deployment_id]

    def latest_progress(
        self, deployment_id: str, where: Callable[[dict[str, Any]], bool] | None = None
    ) -> dict[str, Any] | None:
        """A deployment's newest progress event (that ``where`` accepts), read from its newest segment first."""
        return progress_log.latest_event(self, deployment_id, where)

    # -- stop requests --------------------------------------------------------------------------------

    def request_stop(self, deployment_id: str, reason: str, graceful_timeout_s: float) -> None:
        request = StopRequest(
            deployment_id=deployment_id,
            reason=reason,
            graceful_timeout_s=graceful_timeout_s,
            requested_at=now(),
            requested_from=socket.gethostname(),
        )
        self.write_json(self.STOP_REQUEST, request.to_json())

    def stop_request_for(self, deployment_id: str) -> StopRequest | None:
        """The pending stop request addressed to this deployment, if any (ControlAreaError: an unreadable one)."""
        request = self._read_record(self.STOP_REQUEST, StopRequest)
        return request if request and request.deployment_id == deployment_id else None
