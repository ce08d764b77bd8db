"""Incidents: what went wrong with a job (and what came right again), one JSON line each in the control area's
``incidents.jsonl``, so its history says why it stopped running long after its status record moved on.

Kinds: a crash (its driver died after its query ran), a failed start (it never ran a batch), a failed or
refused change, a stall, the recovery from one, and a crash loop (the supervisor gave up restarting). Each
carries when it was recorded, the deployment, the error (as the driver masked it, cut to a line), the doctor's
diagnosis and cure, and what was done about it.

An incident is recorded once: its key (deployment, kind, since when) is looked up among the newest first, so
every reader that notices the same crash may try. The file keeps the newest ``KEPT`` incidents: on storage
that appends (local disks, HDFS) a line is appended and the file trimmed when it holds twice that; on object
stores it is rewritten whole (incidents are rare). A control area without the file (a job that has had none) has
no incidents; a line that cannot be read is skipped (a torn last line), never an error.
"""

from __future__ import annotations

import json
import socket
from dataclasses import dataclass
from enum import StrEnum

from airflow_async_stream.exceptions import AsyncStreamError, ControlAreaError, UntrustedSpecError, cut_text
from airflow_async_stream.state.control import INCIDENT_BYTES, ControlArea
from airflow_async_stream.state.records import now
from airflow_async_stream.state.storage import append_file
from airflow_async_stream.state.typed import Record

__all__ = [
    "KEPT",
    "Incident",
    "Kind",
    "one_line",
    "read_incidents",
    "record_change",
    "record_incident",
    "record_unreadable",
    "left_out",
    "unreadable",
]

#: How many incidents a job keeps (the newest).
KEPT = 200
#: An error is kept to its first line, at most this long (Spark appends the query's plan to its errors).
ERROR_CHARS = 400
#: A diagnosis, a cure or an action is kept to this many characters.
TEXT_CHARS = 2000


class Kind(StrEnum):
    CRASH = "crash"
    FAILED_START = "failed_start"
    CHANGE_FAILED = "change_failed"
    CHANGE_REFUSED = "change_refused"
    STALL = "stall"
    RECOVERY = "recovery"
    #: The supervisor's restarts did not keep the job up: it makes no more until a person looks.
    CRASH_LOOP = "crash_loop"
    #: The driver restarted its query after a transient failure (a source or sink briefly unreachable).
    QUERY_RESTART = "query_restart"
    #: A control area named a spec the Airflow side never handed to the job's drivers: nothing ran from it.
    UNTRUSTED_SPEC = "untrusted_spec"
    #: The watcher, the supervisor or the tuner could not read or write the job's control area; the others went on.
    UNREADABLE = "unreadable"


@dataclass(frozen=True, kw_only=True)
class Incident(Record):
    """One line of ``incidents.jsonl``."""

    at: float = 0.0
    kind: str = ""
    deployment_id: str | None = None
    #: When the condition began (a crash: the driver's end; a stall: its batch's start); part of the key.
    since: float | None = None
    error: str | None = None
    diagnosis: str | None = None
    cure: str | None = None
    #: What was done about it (e.g. "recorded the deployment as failed", "none: a person must look").
    action: str | None = None
    #: The host whose reader or step recorded it.
    host: str | None = None

    @property
    def key(self) -> tuple[str | None, str, float | None]:
        return (self.deployment_id, self.kind, None if self.since is None else round(self.since, 3))


def one_line(error: str | None) -> str | None:
    """An error's first line, cut to ``ERROR_CHARS``."""
    if not error:
        return None
    first = error.strip().splitlines()[0] if error.strip() else ""
    return first[:ERROR_CHARS] or None


def read_incidents(control: ControlArea) -> list[Incident]:
    """The job's incidents, newest first, their texts cut as where they are recorded (a line written by hand is
    no longer); none when the file does not exist."""
    try:
        text = control.read_bytes(control.INCIDENTS, -INCIDENT_BYTES).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        try:
            data = json.loads(line)
            found.append(_cut(Incident.from_json(data, f"{control.url}/{control.INCIDENTS}")))
        except (ValueError, RecursionError, ControlAreaError):
            continue  # a torn last line, or a line no release wrote (a number or nesting past any limit too)
    return list(reversed(found))


def record_incident(control: ControlArea, incident: Incident) -> bool:
    """Add ``incident`` unless one with its key is recorded already; True when it was added."""
    incident = _cut(incident.but(at=incident.at or now(), host=incident.host or socket.gethostname()))
    known = read_incidents(control)
    if any(old.key == incident.key for old in known):
        return False
    line = (json.dumps(incident.to_json(), sort_keys=True) + "\n").encode()
    if control.appendable and len(known) < 2 * KEPT:
        control.ensure()
        append_file(control.fs, control.path(control.INCIDENTS), line)
        return True
    kept = [json.dumps(old.to_json(), sort_keys=True) + "\n" for old in reversed(known[: KEPT - 1])]
    control.write_bytes(control.INCIDENTS, "".join(kept).encode() + line)
    return True


def _cut(incident: Incident) -> Incident:
    """Its error to one line of ``ERROR_CHARS``, its other texts to ``TEXT_CHARS``."""
    texts = {
        k: cut_text(v, TEXT_CHARS)
        for k in ("kind", "deployment_id", "diagnosis", "cure", "action", "host")
        if (v := getattr(incident, k))
    }
    return incident.but(error=one_line(incident.error), **texts)


def record_change(control: ControlArea, kind: Kind, error: str, diagnosis: str, action: str) -> None:
    """A failed or refused change of the job's current deployment, as it happened (each one is its own)."""
    status = control.read_status()
    at = now()
    record_incident(
        control,
        Incident(
            at=at,
            kind=kind,
            deployment_id=status.deployment_id if status else None,
            since=at,
            error=error,
            diagnosis=diagnosis,
            action=action,
        ),
    )


def unreadable(error: BaseException) -> bool:
    """Whether ``error`` says one job's own storage failed (a folder where a file should be, a full disk, a
    record that is not one): that job's incident, never the end of a pass over the fleet. A refused spec is
    not: it is recorded as such and needs a person."""
    if isinstance(error, ControlAreaError):
        return not isinstance(error, UntrustedSpecError)
    return isinstance(error, OSError | ValueError) and not isinstance(error, AsyncStreamError)  # ours say more


def left_out(control_url: str, error: Exception, actor: str) -> dict[str, str]:
    """One job of the fleet ``actor`` (the supervisor, the tuner) could not act on: ``unreadable`` when its own
    storage failed (its incident; the run goes on and does not fail for it), else ``error``, which fails the
    run once every other job was looked at."""
    if unreadable(error):
        return {
            "control_url": control_url,
            "act": "unreadable",
            "reason": record_unreadable(ControlArea(control_url), error, actor),
        }
    return {"control_url": control_url, "act": "error", "reason": str(error)}


def record_unreadable(control: ControlArea, error: BaseException, actor: str) -> str:
    """``error`` of ``actor`` (the watcher, the supervisor, the tuner) as the job's incident, at most one an
    hour, where even that can be written; returns the line to log."""
    line = f"control area unreadable: {one_line(str(error)) or type(error).__name__}"
    at = now()
    try:
        record_incident(
            control,
            Incident(
                at=at,
                kind=Kind.UNREADABLE,
                since=at - at % 3600,
                error=line,
                diagnosis=f"the {actor} could not read or write {control.url}",
                cure="fix the storage or the file the error names (a folder where a file should be, a full disk, "
                "permissions); `airflow-async-stream release --force` clears a hold or fence that cannot be read",
                action=f"the {actor} left this job and went on with the others",
            ),
        )
    except (OSError, AsyncStreamError, ValueError):
        return f"{line} (not recorded either)"
    return line
