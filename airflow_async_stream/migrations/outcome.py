"""What a migration leaves behind: each stage it reached (how, pause, batches), the step that failed and why (for
the rollback's message), and the error a rolled-back run fails with."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, Self

from airflow_async_stream.exceptions import (
    SafeDisableRolledBackError,
)
from airflow_async_stream.insight.batches import idle_between, ran_a_batch
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import Kind, record_change
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import Status, now
from airflow_async_stream.state.requests import SwitchOutcome

__all__ = ["Stage", "failure_reason", "note_failure", "ran_when_taken", "restart_pause", "rolled_back_error"]


def rolled_back_error(job: str, reason: str, stage: Stage) -> SafeDisableRolledBackError:
    """The error a rolled-back migration ends with: what failed, and that the job keeps running async."""
    how = {"unchanged": "runs on with", "deployed": "was redeployed with"}.get(
        stage.outcome, "was switched in place to"
    )
    return SafeDisableRolledBackError(
        f"async progress tracking stays on for job {job!r}: {reason}. The job {how} async on and checkpoint "
        f"interval 0 (deployment {stage.deployment_id}) and keeps running."
    )


def note_failure(checkpoint: str, dag_id: str, run_id: str, step: str, reason: str) -> None:
    """Record which step of a run failed and why (``safe-disable.json``), for the rollback's message, and the
    failed change as an incident."""
    control = ControlArea.for_checkpoint(checkpoint)
    control.write_json(
        ControlArea.MIGRATION,
        {"dag_id": dag_id, "run_id": run_id, "failed_step": step, "reason": reason, "at": now()},
    )
    record_change(
        control,
        Kind.CHANGE_FAILED,
        reason,
        f"safe-disable step {step} failed ({dag_id} {run_id})",
        "the migration rolls the job back to async progress at interval 0",
    )


def failure_reason(checkpoint: str, dag_id: str, run_id: str) -> str:
    """Why this run's migration failed: the step it noted, else what the checkpoint says now."""
    note = ControlArea.for_checkpoint(checkpoint).read_json(ControlArea.MIGRATION) or {}
    if note.get("run_id") == run_id and note.get("dag_id") == dag_id:
        return f"step {note['failed_step']} failed: {note['reason']}"
    return f"a step failed (see its log); the checkpoint now says: {inspect_checkpoint(checkpoint).reason}"


@dataclass(frozen=True)
class Stage:
    """One configuration the migration moved the job to (``async_interval_0``, ``synchronous``): how it was
    made (switched in place or by a restart, decision/needs.py How) and why, where its wait counts from, and
    the stream's pause across it (idle time between the last batch before and the first after, from the
    progress log's own timestamps; None while no batch ran after it)."""

    to: str
    how: str
    why: str
    deployment_id: str
    start_batch: int | None
    pause_s: float | None = None
    outcome: str = SwitchOutcome.SWITCHED
    #: The driver's reason when the change did not go as asked (the gate's verdict).
    reason: str | None = None
    #: Why ``pause_s`` is None: no batch ran yet, or the job was not running before (nothing paused).
    unmeasured: str = "no batch ran yet"

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Self:
        return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})

    def describe(self) -> str:
        pause = f"not measured: {self.unmeasured}" if self.pause_s is None else f"{self.pause_s:.2f} s"
        return f"to {self.to}: {self.how.replace('_', ' ')} ({self.why}), pause {pause}"

    def to_json(self) -> dict[str, Any]:
        return {
            "to": self.to,
            "how": self.how,
            "why": self.why,
            "deployment_id": self.deployment_id,
            "start_batch": self.start_batch,
            "pause_s": self.pause_s,
            "outcome": self.outcome,
            "reason": self.reason,
            "unmeasured": self.unmeasured,
        }


def ran_when_taken(control: ControlArea, before: Status | None, holder: Holder | None) -> bool:
    """Whether the job ran when ``holder`` took it: it is live now, or it stopped since (by that holder's own
    step). Judge it before a redeploy: the redeploy stops the driver."""
    if before is None:
        return False
    if liveness(before).live:
        return True
    hold = control.read_hold()
    took = hold.acquired_at if hold and holder and hold.holder == holder.name else None
    return took is not None and (before.finished_at or 0) >= took


def restart_pause(control: ControlArea, before: Status | None, after_id: str, ran: bool) -> tuple[float | None, str]:
    """Idle time across a redeploy: end of the previous deployment's last batch to the new one's first; None
    with the reason when there is none to measure. Only a job that ran (``ran_when_taken``) paused: the time
    a job stopped before stood still is not a pause of the redeploy's."""
    if before is None or not ran:
        return None, f"the job was not running before ({before.state if before else 'never deployed'})"
    last = control.latest_progress(before.deployment_id, ran_a_batch)
    after = [e for e in control.read_progress(after_id) if ran_a_batch(e)]  # a deployment just started: short
    if last is None or not after:
        return None, "no batch ran yet" if last else "no batch ran before"
    return idle_between(last, after[0]), ""
