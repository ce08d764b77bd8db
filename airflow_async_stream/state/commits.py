"""One check of "have K batches newer than a baseline been committed?", shared by sensor and trigger.

A check lists ``commits/`` once (names only, no file is opened) and reads the job's status record, so it
can fail at once when the job failed or stopped, and explain a timeout on an idle source. Batches are
counted by id (``checkpoint.committed_since``), never by file: Spark purges old commit files.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.exceptions import CommittedBatchesError, CommittedBatchesTimeoutError
from airflow_async_stream.state.checkpoint import batch_ids, committed_since
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import Liveness, liveness_of
from airflow_async_stream.state.records import ACTIVE_STATES, State, Status
from airflow_async_stream.waits import Log, WaitLog

__all__ = ["CommitCheck", "check_commits", "wait_for_commits"]


@dataclass(frozen=True)
class CommitCheck:
    """The outcome of one look at the commit log and the job's status."""

    baseline: int | None
    needed: int
    committed_after: int
    latest_commit: int | None
    job_error: str | None
    source_idle: bool

    @property
    def done(self) -> bool:
        return self.committed_after >= self.needed

    @property
    def after(self) -> str:
        return "the start" if self.baseline is None else f"batch {self.baseline}"

    def progress(self) -> str:
        return f"{min(self.committed_after, self.needed)}/{self.needed} batches committed after {self.after}"

    def timeout_message(self, waited_s: float) -> str:
        if self.committed_after == 0 and self.source_idle:
            return (
                f"no batch was committed after {self.after} in {waited_s:.0f} s: the source produced no data "
                "(Spark runs a micro-batch only when its source has new data)"
            )
        return f"only {self.progress()} within {waited_s:.0f} s"

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "needed": self.needed,
            "committed_after": self.committed_after,
            "latest_commit": self.latest_commit,
        }


def _job_error(status: Status | None, judged: Liveness, needed: int, after: str) -> str | None:
    """Why waiting longer is pointless: the job failed, stopped, or its driver is gone."""
    if not status:
        return None
    state = status.state
    if state == State.FAILED:
        return f"the job failed: {status.error}"
    if state in (State.STOPPED, State.SUPERSEDED):
        ended = "stopped" if state == State.STOPPED else "was superseded"
        return f"the job {ended} before {needed} batches were committed after {after}"
    if state in ACTIVE_STATES and not judged.live:
        return f"the job's driver is gone: {judged.reason}"
    return None


def check_commits(checkpoint: str, baseline: int | None, needed: int) -> CommitCheck:
    ids = batch_ids(checkpoint, "commits")
    committed_after = committed_since(ids, baseline)
    status, judged = liveness_of(ControlArea.for_checkpoint(checkpoint))  # an exit record counts, from any host
    where = "the start" if baseline is None else f"batch {baseline}"
    error = None if committed_after >= needed else _job_error(status, judged, needed, where)
    idle = bool(status and status.source_idle)
    return CommitCheck(baseline, needed, committed_after, ids[-1] if ids else None, error, idle)


def wait_for_commits(
    checkpoint: str,
    baseline: int | None,
    needed: int,
    timeout_s: float,
    log: Log,
    poll_s: float = 0.5,
    sleep: Callable[[float], None] = time.sleep,
) -> CommitCheck:
    """Block until ``needed`` batches after ``baseline`` are committed (for steps inside one task).

    Logs where it is (waits.py); raises CommittedBatchesError when the job failed or stopped, and
    CommittedBatchesTimeoutError (saying whether the source was idle) after ``timeout_s``.
    """
    started = time.monotonic()
    say = WaitLog(log, f"Waiting for committed batches in {checkpoint}", timeout_s, started=started)
    while True:
        check = check_commits(checkpoint, baseline, needed)
        say(check.progress() + ("; the source has no new data" if check.source_idle else ""))
        if check.done:
            return check
        if check.job_error:
            raise CommittedBatchesError(check.job_error)
        waited = time.monotonic() - started
        if waited >= timeout_s:
            raise CommittedBatchesTimeoutError(check.timeout_message(waited))
        sleep(poll_s)
