"""What the watcher remembers of each job between sweeps, so a sweep reads only what changed.

A sweep read every fleet index entry, and every job's status, exit record, deployment, spec, restarts, what it
last saw and the claim after it, and listed its progress log: seven reads and a list a job, every 5 s
(bench/control_cost.py: $5.65 an hour at S3's prices for 1,000 jobs). The status says what changed: the
deployment, the spec and the restarts go with its deployment and query run; the progress log's tail is named in
it (``progress_files``), so it is read when the status was rewritten, from those files, with no listing. The exit
and deployment records are read only while the status stands still (a driver that wrote since the last sweep was
alive then; a deploy writes its record before its new driver writes anything). What the watcher last saw it
remembers as it wrote it; a claim another watcher made first makes it read that again (watch.py). Jobs no longer
swept are forgotten; a fleet index is listed once a sweep and only its rewritten entries are read (fleet.py).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from airflow_async_stream.insight.read import recorded_spec
from airflow_async_stream.state import progress_log
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import Liveness, liveness
from airflow_async_stream.state.records import ACTIVE_STATES, Deployment, State, Status
from airflow_async_stream.state.typed import Record
from airflow_async_stream.supervise.record import Supervision, read_supervision

__all__ = ["Memory", "Seen", "Sighting", "look", "supervision_of"]

#: The newest progress the watcher reads of a running job (enough for the lag check's batches).
TAIL_BYTES = 8 * 1024


@dataclass(frozen=True, kw_only=True)
class Seen(Record):
    """``watch.json``: the health the watcher last announced (or recorded without an event)."""

    seq: int = 0
    condition: str = ""
    verdict: str = ""
    deployment_id: str | None = None
    held: bool = False
    at: float = 0.0
    #: The newest event verdict the job has not recovered from: kept while it starts, stops or is stopped, so
    #: a job brought back by a person (deploy, resume) is said ``recovered`` too.
    unresolved: str = ""


@dataclass
class Sighting:
    """What a sweep knows of one job now: read this sweep, or remembered because its status said no change."""

    status: Status | None
    liveness: Liveness
    deployment: Deployment | None
    spec: dict[str, Any] | None
    events: list[dict[str, Any]] = field(default_factory=list)
    supervision: Supervision | None = None  # read when needed (watch.py)
    seen: Seen | None = None  # what the watcher last recorded (watch.py), when remembered


def _key(status: Status | None) -> tuple[Any, ...]:
    """What the deployment, spec and restarts go with."""
    return (status.deployment_id, status.query_run_id, status.switches) if status else ()


class Memory:
    """The watcher's memory of each job (by control area) between sweeps, kept by its triggerer process."""

    def __init__(self) -> None:
        self._jobs: dict[str, Sighting] = {}
        #: Each fleet index's entries as read before, by index (sources.find_jobs reads only rewritten ones).
        self.indexes: dict[str, Any] = {}

    def get(self, url: str) -> Sighting | None:
        return self._jobs.get(url)

    def keep(self, url: str, seen: Sighting) -> None:
        self._jobs[url] = seen

    def forget(self, url: str) -> None:
        self._jobs.pop(url, None)

    def only(self, urls: Iterable[str]) -> None:
        """Forget every job not among ``urls`` (retired, moved): the memory holds at most a sweep's jobs."""
        keep = set(urls)
        self._jobs = {url: seen for url, seen in self._jobs.items() if url in keep}


def look(control: ControlArea, memory: Memory | None = None) -> Sighting:
    """Read one job for a sweep: everything without a memory; with one, what its status says changed."""
    status = control.read_status()
    known = memory.get(control.url) if memory is not None else None
    quiet = known is None or known.status == status  # its driver wrote nothing since the last sweep
    moved = known is None or _key(known.status) != _key(status)  # a new deployment or query run
    active = status is not None and status.state in ACTIVE_STATES
    exited = control.read_exit(status.deployment_id) if status and active and quiet else None
    judged = liveness(status, exited=exited)
    # A deploy writes its record before its driver writes a status: read while the status stands still.
    deployment = control.read_deployment() if quiet or moved or known is None else known.deployment
    spec = recorded_spec(control) if moved or known is None else known.spec
    running = status is not None and status.state == State.RUNNING and judged.live
    events: list[dict[str, Any]] = []
    if running and known is not None and quiet:
        events = known.events
    elif running and status is not None:
        events = progress_log.tail_of(control, status.progress_files, TAIL_BYTES)
    kept = known is not None and not moved
    seen = Sighting(
        status,
        judged,
        deployment,
        spec,
        events,
        known.supervision if kept and known else None,
        known.seen if known else None,
    )
    if memory is not None:
        memory.keep(control.url, seen)
    return seen


def supervision_of(control: ControlArea, seen: Sighting) -> Supervision:
    """The supervisor's record of the job: read once per deployment and query run, remembered with the look."""
    if seen.supervision is None:
        seen.supervision = read_supervision(control)
    return seen.supervision
