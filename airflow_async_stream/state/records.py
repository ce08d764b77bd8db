"""The control area's records of a job (status, deployment, hold, driver exit), the states a job passes through,
and the timing rules they carry (heartbeat, the hold's time-to-live). Requests a driver acts on are in
requests.py.

A record read from a file is checked field by field (typed.py); one that cannot be read is a ControlAreaError
naming the file, never taken for a missing one. Fields a later release adds are kept when an earlier one
rewrites a record.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.typed import Record, cut

__all__ = [
    "ACTIVE_STATES",
    "FINAL_STATES",
    "HEARTBEAT_INTERVAL_S",
    "HEARTBEAT_STALE_S",
    "HOLD_MARGIN_S",
    "LOCAL_PROCESS",
    "NOT_LAUNCHED",
    "SUBMITTED",
    "SUFFIX",
    "UP_STATES",
    "Deployment",
    "Driver",
    "DriverExit",
    "Hold",
    "Revocation",
    "State",
    "Status",
    "hold_ttl_s",
    "now",
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
#: ... and a heartbeat older than this means the driver is gone (or than this many of its write intervals).
HEARTBEAT_STALE_S = 20.0
STALE_AFTER_INTERVALS = 3
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
class Status(Record):
    """``status.json``: the driver's account of its deployment, rewritten with every heartbeat."""

    deployment_id: str = ""
    #: A State once read or made (a text that is none of them stays text, and check() refuses it).
    state: State | None = None
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
    query_run_id: str | None = None
    error: str | None = None
    stop_reason: str | None = None
    forced_stop: bool | None = None
    finished_at: float | None = None
    #: Which options came from Airflow connections (never their values), and which PySpark the driver runs.
    secret_options: list[str] = field(default_factory=list)
    pyspark: dict[str, str] | None = None
    #: The runtime bundle the driver imports (driver/bundle.py: its key and folder) and the Python running it.
    runtime: dict[str, str] | None = None
    #: The Spark version the driver runs (its PySpark's, which is its SPARK_HOME's): the rules it was judged by.
    spark_version: str | None = None
    #: What the running query was started with (async options, trigger), and how often it was switched in place.
    configuration: dict[str, Any] | None = None
    switches: int = 0
    #: Since when the trigger has run the batch after ``last_batch_id`` (heartbeats see it; None between
    #: batches), and whether Spark said at the last heartbeat that its source has new data.
    batch_active_since: float | None = None
    data_available: bool | None = None
    #: When the driver restarted its failed query itself (a transient failure: runtime/requery.py), newest last,
    #: at most the policy's ``max_restarts``: the supervisor's policy counts them with its own restarts.
    query_restarts: list[float] = field(default_factory=list)
    #: How often the driver writes its records here, the heartbeat with them (object stores: the spec's
    #: ``logs.control_write_interval_s``); 0: each as it happens, the heartbeat every HEARTBEAT_INTERVAL_S.
    write_interval_s: float = 0.0
    #: The newest two progress segments written when it was, ``{"name", "bytes"}`` oldest first: the watcher
    #: reads the log's tail from them, without listing the log.
    progress_files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def stale_after_s(self) -> float:
        """How old its heartbeat may be while the driver lives: three of its write intervals, at least
        HEARTBEAT_STALE_S (a driver writing every interval may skip one for its progress)."""
        return max(HEARTBEAT_STALE_S, STALE_AFTER_INTERVALS * self.write_interval_s)

    def __post_init__(self) -> None:
        if isinstance(self.state, str) and self.state in State._value2member_map_:
            object.__setattr__(self, "state", State(self.state))

    def check(self, where: str) -> None:
        if not self.state:
            raise ControlAreaError(f"{where} names no state")
        if self.state not in State.__members__.values():
            raise ControlAreaError(f"{where}: state {cut(repr(self.state))} is none of {', '.join(State)}")

    @property
    def source_idle(self) -> bool:
        """The query runs but its source had no new data since its last batch."""
        return bool(self.idle_at) and (self.idle_at or 0) >= (self.last_progress_at or 0)


#: The kind of driver launched as a process of an Airflow host (the others: ``yarn-application``,
#: ``kubernetes-pod``, named by hooks/cluster.py).
LOCAL_PROCESS = "local-process"


@dataclass(frozen=True, kw_only=True)
class Driver(Record):
    """A deployment's ``driver``: how to reach it. A process an Airflow host launched, with what proves a
    process is it (host, pid, start ticks, boot id, pid namespace: driver/process.py), or a cluster's handle
    (a YARN application, a Kubernetes pod: hooks/cluster.py)."""

    kind: str = LOCAL_PROCESS
    host: str | None = None
    launcher_pid: int | None = None
    launcher_started: int | None = None
    boot_id: str | None = None
    pid_namespace: str | None = None
    #: spark-submit's output, and whether that file is on the launching host only (a remote control area).
    log: str | None = None
    log_on_host: bool = False
    log_pump_pid: int | None = None
    #: The log pump records the driver's exit in the control area (driver/exits.py).
    exit_record: bool = False
    application_id: str | None = None
    pod: str | None = None
    namespace: str | None = None
    #: The driver's own pid (from its status record, once it confirmed).
    driver_pid: int | None = None

    def check(self, where: str) -> None:
        for name in ("launcher_pid", "log_pump_pid"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise ControlAreaError(f"{where}: {name} should be a process id, found {value}")

    def to_json(self) -> dict[str, Any]:
        """Only what is known: a local driver's record names no pod, a cluster's no pid."""
        return {k: v for k, v in super().to_json().items() if v is not None}

    @property
    def on_a_host(self) -> bool:
        """A driver process launched from an Airflow host, not a driver on a cluster."""
        return self.kind == LOCAL_PROCESS


@dataclass(frozen=True, kw_only=True)
class Deployment(Record):
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
    #: How to reach the driver; None before submit.
    driver: Driver | None = None
    first_batch_id: int | None = None
    query_id: str | None = None
    query_run_id: str | None = None
    confirmed_at: float | None = None
    #: The fencing token of the hold it was deployed under: its driver does not start once it is stale.
    hold_token: int | None = None


@dataclass(frozen=True, kw_only=True)
class Hold(Record):
    """``hold.json``: which DAG run or process may change the job now, and until when (hold.py)."""

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
    #: The fencing token this hold was granted (fence.json's then): 0 if the record names
    #: none (written by hand): fenced out by any hold granted since.
    token: int = 0

    def check(self, where: str) -> None:
        if not self.holder:
            raise ControlAreaError(f"{where} names no holder")


@dataclass(frozen=True, kw_only=True)
class Revocation(Record):
    """One entry of ``revoked-holds.json``: a holder whose hold a forced stop ended, by whom and why."""

    by: str = ""
    reason: str | None = None
    at: float = 0.0
    at_text: str | None = None


@dataclass(frozen=True, kw_only=True)
class DriverExit(Record):
    """``driver-exit.json``: the newest driver exit its launching host saw (driver/exits.py)."""

    deployment_id: str = ""
    host: str | None = None
    exited_at: float = 0.0
    seen: str | None = None


def now() -> float:
    return time.time()
