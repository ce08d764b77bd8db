"""A look at one job: its health verdict (``look``, for readers, writes nothing) and, for an actor's look
(``check_up``: the supervisor, a stop, a resume, the tuner, a step that failed), what it is the first to see
recorded, once:

- A deployment whose driver died without a final status (killed hard, its host lost, or its exit recorded by
  the host that launched it) is recorded ``failed`` with the reason, so its state never stays ``running`` and
  every host, stop and deploy after sees it ended. A reader shows it so, and leaves the record to an actor.
- A crash, a failed start, a stall and the recovery from a stall become incidents (state/incidents.py), a
  crash or failed start with the doctor's diagnosis and cure.

``status``, ``list``, ``incidents`` and the page read through ``look``: with read-only credentials they show
the same. Each look reads a bounded amount: the records, the newest ``TAIL_BYTES`` of the progress log, the
incidents; an actor's look asks the doctor only when an incident is new.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.exceptions import CommittedBatchesError, DriverFailedError
from airflow_async_stream.insight.doctor import diagnose
from airflow_async_stream.insight.health import DOWN, Health, Limits, Look, Verdict, judge
from airflow_async_stream.insight.read import recorded_spec
from airflow_async_stream.insight.symptoms import read_symptoms
from airflow_async_stream.state import progress_log
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Incident, Kind, read_incidents, record_incident
from airflow_async_stream.state.liveness import Liveness, liveness_of
from airflow_async_stream.state.records import ACTIVE_STATES, Deployment, State, Status, now
from airflow_async_stream.waits import Log

__all__ = ["TAIL_BYTES", "Checkup", "check_up", "cure_line", "cure_named", "diagnosis_of", "look"]

_log = logging.getLogger(__name__)

#: How much of a job's newest progress a look reads: about 45 batches' events.
TAIL_BYTES = 32 * 1024


@dataclass(frozen=True)
class Checkup:
    """What one look found: the status record (as recorded after the look), liveness and health."""

    status: Status | None
    liveness: Liveness
    health: Health
    deployment: Deployment | None = None
    events: Sequence[Mapping[str, Any]] = ()
    #: The job's incidents after the look, newest first.
    incidents: Sequence[Incident] = ()


def look(
    control: ControlArea,
    events: Sequence[Mapping[str, Any]] | None = None,
    spec: Mapping[str, Any] | None = None,
    at: float | None = None,
) -> Checkup:
    """A reader's look: the health verdict and the incidents recorded, nothing written. A deployment whose
    driver died without a final status is shown as the failed one it is (the next actor records it so)."""
    status, judged, deployment, events, health = _judge(control, events, spec, at)
    if health.verdict in DOWN and status is not None and status.state in ACTIVE_STATES:
        status = _failed(status, judged)
    return Checkup(status, judged, health, deployment, events, read_incidents(control))


def check_up(
    control: ControlArea,
    checkpoint: str | None,
    events: Sequence[Mapping[str, Any]] | None = None,
    spec: Mapping[str, Any] | None = None,
    at: float | None = None,
) -> Checkup:
    """An actor's look: judge one job's health; settle a dead deployment and record incidents, each once, a
    crash or failed start with the doctor's diagnosis of ``checkpoint``."""
    status, judged, deployment, events, health = _judge(control, events, spec, at)
    try:
        if health.verdict in DOWN and status is not None and status.state in ACTIVE_STATES:
            status = _settle(control, status, judged)
        incidents = _incidents(control, checkpoint, status, health) if status else read_incidents(control)
    except OSError as exc:  # an actor without write access: the verdict stands, the next one with access records
        _log.warning(
            "%s: could not record what this look found (%s); the next actor with access will", control.url, exc
        )
        incidents = read_incidents(control)
    return Checkup(status, judged, health, deployment, events, incidents)


def _judge(
    control: ControlArea, events: Sequence[Mapping[str, Any]] | None, spec: Mapping[str, Any] | None, at: float | None
) -> tuple[Status | None, Liveness, Deployment | None, Sequence[Mapping[str, Any]], Health]:
    status, judged = liveness_of(control)
    deployment = control.read_deployment()
    if events is None:  # from the files the status names: no listing of the log
        events = progress_log.tail_of(control, status.progress_files if status else [], TAIL_BYTES)
    spec = recorded_spec(control) if spec is None else spec
    return status, judged, deployment, events, judge(Look.of(status, judged, deployment, events), Limits.of(spec), at)


def _failed(status: Status, judged: Liveness) -> Status:
    """``status`` as a driver that died without a final status leaves it, once recorded."""
    return status.but(
        state=State.FAILED,
        error=status.error or f"its driver died without a final status: {judged.reason}",
        finished_at=now(),
        batch_active_since=None,
    )


def _settle(control: ControlArea, status: Status, judged: Liveness) -> Status:
    """Record a deployment whose driver died without a final status as failed, unless its status changed
    since it was read (its driver wrote again: it lives)."""
    again = control.read_status()
    if again is None or again.to_json() != status.to_json():
        return again or status
    final = _failed(status, judged)
    control.write_status(final)
    _log.info("Deployment %s: %s; recorded it as failed", status.deployment_id, judged.reason)
    return final


def _incidents(control: ControlArea, checkpoint: str | None, status: Status, health: Health) -> list[Incident]:
    """Record what this look is the first to see; the incidents after it, newest first."""
    known = read_incidents(control)
    return read_incidents(control) if _record_new(control, checkpoint, status, health, known) else known


def _record_new(
    control: ControlArea, checkpoint: str | None, status: Status, health: Health, known: list[Incident]
) -> bool:
    mine = [i for i in known if i.deployment_id == status.deployment_id]
    if health.verdict in DOWN:
        kind = Kind.CRASH if health.verdict == Verdict.CRASHED else Kind.FAILED_START
        if any(i.kind == kind for i in mine):
            return False
        found = diagnosis_of(control, checkpoint)
        return record_incident(
            control,
            Incident(
                kind=kind,
                deployment_id=status.deployment_id,
                since=health.since,
                error=status.error,
                diagnosis=found.get("summary") or health.reason,
                cure=found.get("cure"),
                action="recorded the deployment as failed; nothing restarted it",
            ),
        )
    if health.verdict == Verdict.STALLED:
        if any(i.kind == Kind.STALL and i.since == health.since for i in mine):
            return False
        return record_incident(
            control,
            Incident(
                kind=Kind.STALL,
                deployment_id=status.deployment_id,
                since=health.since,
                diagnosis=health.reason,
                cure=STALL_CURE,
                action="none: the driver runs on",
            ),
        )
    stall = next((i for i in mine if i.kind in (Kind.STALL, Kind.RECOVERY)), None)
    if health.verdict in (Verdict.HEALTHY, Verdict.IDLE, Verdict.LAGGING) and stall and stall.kind == Kind.STALL:
        return record_incident(
            control,
            Incident(
                kind=Kind.RECOVERY,
                deployment_id=status.deployment_id,
                since=stall.since,
                diagnosis=f"{health.verdict}: {health.reason}",
                action="none needed",
            ),
        )
    return False


#: What to do about a stall.
STALL_CURE = (
    "look at the driver log and the Spark UI's active stages for what the batch waits on (a slow source or "
    "sink, a UDF that blocks); `airflow-async-stream stop JOB` stops it between batches, or after its "
    "graceful timeout"
)


def diagnosis_of(control: ControlArea, checkpoint: str | None) -> dict[str, Any]:
    """The doctor's diagnosis, summary and cure (empty without a checkpoint, or when it cannot tell)."""
    if not checkpoint:
        return {}
    try:
        found = diagnose(read_symptoms(checkpoint, control))
    except Exception as exc:  # noqa: BLE001 - the incident is recorded without it, saying why
        _log.warning("The doctor could not read %s: %s", checkpoint, exc)
        return {"summary": None, "cure": f"airflow-async-stream doctor {checkpoint} (it failed here: {exc})"}
    return {"diagnosis": found.diagnosis, "summary": f"{found.diagnosis}: {found.summary}", "cure": found.cure}


def cure_line(checkpoint: str) -> str:
    """After a look (which records the incident), the doctor's diagnosis in a line and the command to run."""
    control = ControlArea.for_checkpoint(checkpoint)
    looked = check_up(control, checkpoint)
    newest = looked.incidents[0] if looked.incidents else None
    deployment = looked.status.deployment_id if looked.status else None
    if newest and newest.kind in (Kind.CRASH, Kind.FAILED_START) and newest.deployment_id == deployment:
        summary = newest.diagnosis  # the look asked the doctor for it: not twice
    else:
        summary = diagnosis_of(control, checkpoint).get("summary")
    said = f"doctor: {summary}; " if summary else ""
    return f"{said}run `airflow-async-stream doctor {checkpoint}` for the evidence and the cure"


@contextmanager
def cure_named(checkpoint: str, log: Log = _log) -> Iterator[None]:
    """A step that fails because its driver failed or died says the doctor's diagnosis and the command to run,
    in its log and its error (same type, same traceback)."""
    try:
        yield
    except (DriverFailedError, CommittedBatchesError) as exc:
        try:
            line = cure_line(checkpoint)
        except Exception as failed:  # noqa: BLE001 - the step's own error is the one to raise
            line = f"run `airflow-async-stream doctor {checkpoint}` (a look here failed: {failed})"
        log.error("%s", line)
        exc.args = (f"{exc.args[0] if exc.args else exc}\n{line}", *exc.args[1:])
        raise
