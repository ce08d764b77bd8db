"""The control area: our files beside a job's checkpoint (never inside Spark's ``offsets/`` or ``commits/``).

Layout of ``<checkpoint>.async-stream/``:

``spec.json``          the validated spec the latest deploy submitted
``deployment.json``    the deployment record (who deployed what, where the driver runs)
``status.json``        the driver's status record with heartbeat, rewritten atomically
``progress/``          one JSON line per micro-batch, in segment files with a retention (progress_log.py)
``progress.jsonl``     the progress log of releases before segments, still read (local disks, HDFS)
``stop-request.json``  present while a graceful stop is requested for one deployment
``reconfigure-request.json``  present while an in-place switch of one deployment's query is requested
``reconfiguration.json``      what the driver did with the latest such request, step by step (switch/request.py)
``driver.log``         spark-submit's output, for drivers launched on the Airflow host, rotated to
                       ``driver.log.1`` ... (driver_log.py)
``stable.json``        the last spec that ran stably: its deployment committed 2 batches after its start
``lease.json``         the job's hold: which DAG run or process may change it now (``.lease.lock``: its
                       guard on local disks, hold.py)
``revoked-holds.json`` holders whose hold a forced stop ended (the newest 32): they change the job no more
``fence.json``         the newest hold's fencing token, a number that only grows (fence.py)
``rollout.json``       the latest rollout step's outcome for this job
``safe-disable.json``  which step of a safe-disable run failed and why, for its rollback's message

Both the driver and Airflow reach it through fsspec, so it works wherever the checkpoint lives.
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields, replace
from enum import StrEnum
from typing import Any, Self, TypeVar

import fsspec
from fsspec.implementations.local import LocalFileSystem

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state import progress_log
from airflow_async_stream.state.progress_log import ProgressWriter, Retention

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "NOT_LAUNCHED",
    "SUBMITTED",
    "UP_STATES",
    "ControlArea",
    "Deployment",
    "Hold",
    "Liveness",
    "SwitchRequest",
    "SwitchAccount",
    "State",
    "Status",
    "SwitchOutcome",
    "SwitchPhase",
    "control_url_for",
    "hold_ttl_s",
    "liveness",
    "local_pid_alive",
    "now",
    "read_json_object",
    "replace_file",
]


class State(StrEnum):
    """A deployment's state in its status record (written by the driver; ``failed`` also by a stop that
    found the driver gone)."""

    STARTING = "starting"
    RUNNING = "running"
    STOPPING = "stopping"
    STOPPED = "stopped"
    FAILED = "failed"
    #: Ended before its query started: another deployment replaced it while it was launching (fence.py).
    SUPERSEDED = "superseded"


#: A driver in these states may still run (its heartbeat decides) ...
ACTIVE_STATES = frozenset({State.STARTING, State.RUNNING, State.STOPPING})
#: ... in these it runs or is about to, and nobody asked it to stop ...
UP_STATES = frozenset({State.STARTING, State.RUNNING})
#: ... and in these it has ended.
FINAL_STATES = frozenset({State.STOPPED, State.FAILED, State.SUPERSEDED})
#: A deployment record's state while its driver is on its way, and when its deploy gave up before the launch.
SUBMITTED, NOT_LAUNCHED = "submitted", "not launched"
SUFFIX = ".async-stream"
#: The driver rewrites its heartbeat this often (seconds) ...
HEARTBEAT_INTERVAL_S = 2.0
#: ... and a heartbeat older than this means the driver is gone.
HEARTBEAT_STALE_S = 20.0
#: Slack on every hold, beyond the time limits of the steps it covers (seconds).
HOLD_MARGIN_S = 60.0


def hold_ttl_s(
    *,
    deploys: int = 0,
    stops: int = 0,
    waits: int = 0,
    startup_timeout_s: float = 0.0,
    stop_kill_after_s: float = 0.0,
    wait_timeout_s: float = 0.0,
) -> float:
    """How long a holder keeps a job: the sum of the time limits of the steps it covers, plus a margin.

    A deploy may first stop the live driver (killed ``stop_kill_after_s`` after the request at the latest),
    then waits up to ``startup_timeout_s``; a stop takes at most ``stop_kill_after_s``; a wait for committed
    batches at most ``wait_timeout_s``.
    """
    return (
        deploys * (startup_timeout_s + stop_kill_after_s)
        + stops * stop_kill_after_s
        + waits * wait_timeout_s
        + HOLD_MARGIN_S
    )


# -- typed records ------------------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class _Record:
    """A JSON record of the control area. Keys this release does not know (a newer release's) are kept in
    ``extra`` and written back; keys it knows but a record lacks (an older release's) read as their default."""

    extra: Mapping[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, data: Mapping[str, Any], where: str = "record") -> Self:
        known = {f.name for f in fields(cls)} - {"extra"}
        if not isinstance(data, Mapping):
            raise ControlAreaError(f"{where} should hold a JSON object, found {type(data).__name__}")
        record = cls(
            **{k: v for k, v in data.items() if k in known}, extra={k: v for k, v in data.items() if k not in known}
        )
        record.check(where)
        return record

    def check(self, where: str) -> None:
        """Raise ControlAreaError naming the file and field when a field the provider relies on is missing."""

    def to_json(self) -> dict[str, Any]:
        data = dict(self.extra)
        data.update({f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"})
        return data

    def but(self, **changes: Any) -> Self:
        """A copy with ``changes`` (records are immutable)."""
        return replace(self, **changes)


@dataclass(frozen=True, kw_only=True)
class Status(_Record):
    """``status.json``: the driver's account of its deployment, rewritten with every heartbeat."""

    deployment_id: str = ""
    state: str = ""
    job: str | None = None
    host: str | None = None
    pid: int | None = None
    started_at: float | None = None
    heartbeat_at: float = 0.0
    updated_at: float | None = None
    batches: int = 0
    first_batch_id: int | None = None
    last_batch_id: int | None = None
    last_progress_at: float | None = None
    idle_at: float | None = None
    query_id: str | None = None
    run_id: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    forced_stop: bool | None = None
    finished_at: float | None = None
    #: Which options came from Airflow connections (never their values), and which PySpark the driver runs.
    secret_options: list[str] = field(default_factory=list)
    pyspark: dict[str, str] | None = None
    #: What the running query was started with (async options, trigger), and how often it was switched in place.
    configuration: dict[str, Any] | None = None
    switches: int = 0

    def check(self, where: str) -> None:
        if not self.state:
            raise ControlAreaError(f"{where} names no state")

    @property
    def source_idle(self) -> bool:
        """The query runs but its source had no new data since its last batch."""
        return bool(self.idle_at) and (self.idle_at or 0) >= (self.last_progress_at or 0)


@dataclass(frozen=True, kw_only=True)
class Deployment(_Record):
    """``deployment.json``: what the latest deploy submitted, where its driver runs, and how it started."""

    deployment_id: str = ""
    job: str | None = None
    checkpoint: str | None = None
    control_area: str | None = None
    master: str | None = None
    async_progress: dict[str, Any] = field(default_factory=dict)
    trigger: dict[str, Any] = field(default_factory=dict)
    #: The batch before the first one this deployment runs (``checkpoint.resume_point``): waits count the
    #: batches committed after it.
    start_batch: int | None = None
    deployed_at: float | None = None
    state: str = SUBMITTED
    airflow: dict[str, Any] = field(default_factory=dict)
    #: Which options came from Airflow connections (never their values).
    secret_options: list[str] = field(default_factory=list)
    #: How to reach the driver: kind, host, pids, log (see driver_process.py); None before submit.
    driver: dict[str, Any] | None = None
    first_batch_id: int | None = None
    query_id: str | None = None
    run_id: str | None = None
    confirmed_at: float | None = None
    #: The fencing token of the hold it was deployed under: its driver does not start once it is stale.
    hold_token: int | None = None


@dataclass(frozen=True, kw_only=True)
class Hold(_Record):
    """``lease.json``: which DAG run or process may change the job now, and until when (hold.py)."""

    holder: str = ""
    purpose: str | None = None
    host: str | None = None
    pid: int | None = None
    dag_id: str | None = None
    run_id: str | None = None
    acquired_at: float = 0.0
    expires_at: float = 0.0
    acquired_at_text: str | None = None
    expires_at_text: str | None = None
    #: The fencing token this hold was granted (fence.json's then): 0 in a hold of an earlier release.
    token: int = 0

    def check(self, where: str) -> None:
        if not self.holder:
            raise ControlAreaError(f"{where} names no holder")


class SwitchPhase(StrEnum):
    """Where an in-place switch is: the driver writes each phase before it acts on it."""

    STOPPING = "stopping"
    STOPPED = "stopped"
    STARTED = "started"
    DONE = "done"


class SwitchOutcome(StrEnum):
    SWITCHED = "switched"
    #: The request asked for a synchronous query, the stopped checkpoint was not safe for it.
    KEPT_ASYNC_AT_INTERVAL_0 = "kept_async_at_interval_0"
    #: The change needs a new driver; nothing was stopped.
    REFUSED = "refused"
    #: The new query would not start: Spark rejected its settings before the stop (nothing stopped), or it
    #: failed to start after it (the previous configuration runs again).
    FAILED = "failed"
    #: The deployment it was meant for ended before applying it (a later deployment refused it).
    ABANDONED = "abandoned"
    #: The hold it was asked under ended (a forced stop) before the driver applied it; nothing was stopped.
    REVOKED = "revoked"
    #: A rehearsal: the driver built the requested query without starting it, and stopped nothing.
    REHEARSED = "rehearsed"


@dataclass(frozen=True, kw_only=True)
class SwitchRequest(_Record):
    """``reconfigure-request.json``: switch one deployment's query to ``spec`` without a new driver."""

    request_id: str = ""
    deployment_id: str = ""
    spec: dict[str, Any] = field(default_factory=dict)
    #: Start synchronously only when the stopped checkpoint is safe for it, else async on at interval 0.
    require_sync_safe: bool = False
    reason: str | None = None
    graceful_timeout_s: float = 60.0
    requested_at: float | None = None
    requested_from: str | None = None
    #: The fencing token of the hold it was asked under: the driver does not apply it once it is stale.
    hold_token: int | None = None
    #: Only build the requested query, without starting it or stopping the running one: a change that needs a
    #: new driver is checked by Spark before the old driver is stopped for it.
    rehearse: bool = False

    def check(self, where: str) -> None:
        for name in ("request_id", "deployment_id", "spec"):
            if not getattr(self, name):
                raise ControlAreaError(f"{where} names no {name}")


@dataclass(frozen=True, kw_only=True)
class SwitchAccount(_Record):
    """``reconfiguration.json``: the driver's account of one switch request, rewritten at every phase."""

    request_id: str = ""
    deployment_id: str = ""
    phase: str = SwitchPhase.DONE
    outcome: str | None = None
    reason: str | None = None
    #: The configuration (async options, trigger) before and after the switch.
    before: dict[str, Any] = field(default_factory=dict)
    after: dict[str, Any] | None = None
    last_batch_before: int | None = None
    #: The batch before the new query's first (``checkpoint.resume_point`` once the query stopped): every
    #: commit after it is the new query's (a wait for its batches counts from it, as from a deploy's start_batch).
    committed_before: int | None = None
    first_batch_after: int | None = None
    run_id: str | None = None
    forced_stop: bool | None = None
    requested_at: float | None = None
    stopped_at: float | None = None
    started_at: float | None = None
    #: Idle time of the stream across the switch: from the end of the last batch before to the start of the
    #: first batch after, from the progress log's own timestamps.
    pause_s: float | None = None
    #: The inspector's verdict when the request asked for a gated synchronous start.
    gate: str | None = None

    def check(self, where: str) -> None:
        if not self.request_id:
            raise ControlAreaError(f"{where} names no request_id")

    @property
    def settled(self) -> bool:
        """Nothing more will happen to this switch (its first batch may still be awaited: see ``phase``)."""
        return self.phase == SwitchPhase.DONE


_R = TypeVar("_R", bound=_Record)


def now() -> float:
    return time.time()


def replace_file(fs: fsspec.AbstractFileSystem, target: str, payload: bytes) -> None:
    """Replace a file atomically, so a reader never sees half of it: a temporary file beside it and a rename
    on local disks, a single put on object stores (whose puts are atomic)."""
    if isinstance(fs, LocalFileSystem):
        folder, name = posixpath.split(target)
        tmp = posixpath.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        with open(tmp, "wb") as fh:
            fh.write(payload)
        os.replace(tmp, target)
    else:
        fs.pipe_file(target, payload)


def read_json_object(fs: fsspec.AbstractFileSystem, path: str, where: str) -> dict[str, Any] | None:
    """A file's JSON object, or None when the file does not exist; ControlAreaError naming ``where`` when it
    holds anything else (a record that cannot be read is an error, never taken for a missing one)."""
    try:
        raw = fs.cat_file(path)
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ControlAreaError(f"{where} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ControlAreaError(f"{where} should hold a JSON object, found {type(data).__name__}")
    return data


def control_url_for(checkpoint: str) -> str:
    """The control area of a checkpoint: a sibling folder named ``<checkpoint>.async-stream``."""
    return checkpoint.rstrip("/") + SUFFIX


class ControlArea:
    """Files of one job's control area, reached through fsspec."""

    SPEC = "spec.json"
    DEPLOYMENT = "deployment.json"
    STATUS = "status.json"
    STOP_REQUEST = "stop-request.json"
    SWITCH_REQUEST = "reconfigure-request.json"
    SWITCH_ACCOUNT = "reconfiguration.json"
    DRIVER_LOG = "driver.log"
    STABLE = "stable.json"
    ROLLOUT = "rollout.json"
    MIGRATION = "safe-disable.json"
    HOLD = "lease.json"  # the hold's file keeps its first name: a hold taken before an upgrade still holds
    REVOKED_HOLDS = "revoked-holds.json"
    FENCE = "fence.json"
    HOLD_GUARD = ".lease.lock"  # likewise: both releases must serialise on the same file
    PROGRESS = "progress"
    LEGACY_PROGRESS = "progress.jsonl"

    #: Protocols whose files can be appended to; on others (s3, gs, abfs, memory...) segments are rewritten whole.
    APPENDABLE = frozenset({"file", "local", "hdfs", "viewfs"})

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root = fsspec.core.url_to_fs(self.url)
        #: The progress log's limits, for the writer of this process's deployment (the driver sets the spec's).
        self.progress_retention = Retention()
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
        self.fs.makedirs(self.root, exist_ok=True)

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

    def read_bytes(self, name: str) -> bytes:
        return bytes(self.fs.cat_file(self.path(name)))

    def write_bytes(self, name: str, payload: bytes) -> None:
        """Replace a file atomically (temp file and rename locally; a single put on object stores)."""
        replace_file(self.fs, self.path(name), payload)

    def remove(self, name: str) -> None:
        try:
            self.fs.rm_file(self.path(name))
        except FileNotFoundError:
            pass

    # -- progress log ---------------------------------------------------------------------------------

    @property
    def appendable(self) -> bool:
        protocols = self.fs.protocol if isinstance(self.fs.protocol, tuple) else (self.fs.protocol,)
        return bool(self.APPENDABLE & set(protocols))

    def append_progress(self, event: dict[str, Any]) -> None:
        """Add one event to the progress log as its deployment's writer (see progress_log.py)."""
        deployment = str(event.get("deployment_id") or "unknown")
        if self._progress is None or self._progress.deployment_id != deployment:
            self._progress = ProgressWriter(self, deployment, self.progress_retention)
        self._progress.append(event)

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
        self.write_json(
            self.STOP_REQUEST,
            {
                "deployment_id": deployment_id,
                "reason": reason,
                "graceful_timeout_s": graceful_timeout_s,
                "requested_at": now(),
                "requested_from": socket.gethostname(),
            },
        )

    def stop_request_for(self, deployment_id: str) -> dict[str, Any] | None:
        """The pending stop request addressed to this deployment, if any."""
        try:
            request = self.read_json(self.STOP_REQUEST)
        except ControlAreaError:
            return None
        if request and request.get("deployment_id") == deployment_id:
            return request
        return None


@dataclass(frozen=True)
class Liveness:
    """Whether a driver is alive, judged from its status record, and why."""

    live: bool
    reason: str


def local_pid_alive(pid: int) -> bool:
    """True while a process of this host runs (a zombie counts as gone)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()[0] != "Z"
    except OSError:
        return True


def liveness(status: Status | Mapping[str, Any] | None, stale_after_s: float = HEARTBEAT_STALE_S) -> Liveness:
    """Judge a status record: live only in an active state with a fresh heartbeat (and a living local pid)."""
    if not status:
        return Liveness(False, "no status record")
    if not isinstance(status, Status):
        status = Status.from_json(status, "the status record")
    state = status.state
    if state not in ACTIVE_STATES:
        return Liveness(False, f"state is {state}")
    age = now() - float(status.heartbeat_at or 0)
    if age > stale_after_s:
        return Liveness(False, f"state is {state} but the last heartbeat is {age:.0f} s old: the driver is gone")
    pid = status.pid
    if pid and status.host == socket.gethostname() and not local_pid_alive(int(pid)):
        return Liveness(False, f"state is {state} but driver process {pid} on this host has exited")
    return Liveness(True, f"state is {state}, heartbeat {age:.0f} s ago")
