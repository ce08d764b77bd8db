"""The watcher's sweep over a fleet: each job's health from its small records (status, driver exit, deployment,
hold, the newest few progress events), and a change only when its health changes: ``crashed``,
``failed_to_start``, ``stalled``, ``lagging``, ``recovered`` (never once per poll).

What a job was last seen as is kept beside it (``watch.json``), so a watcher that restarts (a triggerer
SIGKILLed and replaced) emits nothing it emitted before. Each change is claimed first with a conditional
create of ``watch/<seq>`` (the store's create-if-absent, ``O_EXCL`` on local disks), so of two watchers only
one emits it, and a watcher that died between the claim and ``watch.json`` is caught up from its claim.

A job down and not answered (no restart recorded for its deployment, its policy would restart it now) is
announced again after ``RESEND_AFTER_S``: an event lost with a triggerer that died before Airflow stored it
still reaches the supervisor. A down job a hold keeps is announced again when the hold ends.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass

from airflow_async_stream.exceptions import AsyncStreamError, ControlAreaError, SpecError
from airflow_async_stream.insight.health import DOWN, Health, Limits, Look, Verdict, judge
from airflow_async_stream.spec.load import parse_part
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import create_once
from airflow_async_stream.state.hold import hold_state
from airflow_async_stream.state.incidents import record_unreadable, unreadable
from airflow_async_stream.state.records import now
from airflow_async_stream.supervise.memory import Memory, Seen, Sighting, look, supervision_of
from airflow_async_stream.supervise.metrics import Figures, figures_of
from airflow_async_stream.supervise.policy import Response, case_for, respond

__all__ = ["EVENTS", "RESEND_AFTER_S", "Change", "Seen", "sweep", "watch_job"]

_log = logging.getLogger(__name__)

#: The verdicts that are events of their own; a move from one of them back to healthy or idle is ``recovered``.
EVENTS = frozenset({Verdict.CRASHED, Verdict.FAILED_TO_START, Verdict.STALLED, Verdict.LAGGING})
RECOVERED = "recovered"
OK = frozenset({Verdict.HEALTHY, Verdict.IDLE})
#: A down job nothing answered is announced again after this long.
RESEND_AFTER_S = 120.0
#: The claims kept (the newest).
KEPT_CLAIMS = 8
CLAIMS = "watch"
#: Where a sweep sends each job's figures.
Measure = Callable[[Figures], None]


@dataclass(frozen=True)
class Change:
    """A change of one job's health: the event the watcher emits."""

    job: str
    control_area: str
    checkpoint: str
    event: str
    verdict: str
    reason: str
    deployment_id: str | None
    was: str | None
    seq: int

    def to_json(self) -> dict[str, object]:
        return asdict(self)


def _condition(verdict: Verdict, deployment_id: str | None, held: bool) -> str:
    """What a change is a change of: a job down is down per deployment and per hold; the rest by verdict."""
    if verdict in DOWN:
        return f"{verdict}:{deployment_id}:{'held' if held else 'free'}"
    if verdict in EVENTS:
        return str(verdict)
    return "ok" if verdict in OK else f"quiet:{verdict}"


def _event(verdict: Verdict, before: Seen | None, held: bool, deployment_id: str | None) -> str | None:
    """The event of a change (None: recorded, nothing to say). A down job taken under a hold (the supervisor's
    own restart, a migration) is no news; the hold ending on it still down is."""
    same_down = before is not None and before.verdict == verdict and before.deployment_id == deployment_id
    if verdict in DOWN and same_down and held:
        return None
    if verdict in EVENTS:
        return str(verdict)
    return RECOVERED if before is not None and before.unresolved and verdict in OK else None


def read_seen(control: ControlArea) -> Seen | None:
    data = control.read_json(control.WATCH)
    return None if data is None else Seen.from_json(data, f"{control.url}/{control.WATCH}")


def _claim(control: ControlArea, seen: Seen) -> bool:
    """Claim ``seen.seq``: True for the one watcher whose create made it."""
    try:
        create_once(control, f"{CLAIMS}/{seen.seq}", json.dumps(seen.to_json()).encode())
    except FileExistsError:
        return False
    if seen.seq > KEPT_CLAIMS:
        control.remove(f"{CLAIMS}/{seen.seq - KEPT_CLAIMS}")
    return True


def _caught_up(control: ControlArea, seen: Seen | None) -> Seen | None:
    """The newest claim past ``watch.json`` (a watcher died between the two, or another is ahead)."""
    seq = seen.seq if seen else 0
    newest = seen
    while True:
        try:
            data = json.loads(control.read_bytes(f"{CLAIMS}/{seq + 1}"))
        except FileNotFoundError:
            return newest
        newest, seq = Seen.from_json(data, f"{control.url}/{CLAIMS}/{seq + 1}"), seq + 1


def _unanswered(control: ControlArea, health: Health, deployment_id: str | None, at: float) -> bool:
    """Whether the supervisor's policy would restart this down job now and nothing has."""
    try:
        case = case_for(control, health, deployment_id)
    except (SpecError, ControlAreaError):
        return False  # its supervisor run says why; announcing it again would not help
    return respond(case, at).act == Response.RESTART


def watch_job(
    name: str,
    control: ControlArea,
    checkpoint: str,
    at: float | None = None,
    measure: Measure | None = None,
    memory: Memory | None = None,
) -> Change | None:
    """Look at one job; record and return its change of health (None: no change, or another watcher's); its
    figures (metrics.py) go to ``measure``. With ``memory`` (kept between sweeps), only what changed is read."""
    at = now() if at is None else at
    seen_now = look(control, memory)
    status, judged, deployment, spec = seen_now.status, seen_now.liveness, seen_now.deployment, seen_now.spec
    health = judge(Look.of(status, judged, deployment, seen_now.events), Limits.of(spec), at)
    verdict = health.verdict
    if verdict in DOWN:
        seen_now.supervision = None  # the supervisor acts on a job that is down: read its record afresh
    if measure is not None:
        restarts = _restarts_in_window(control, seen_now, at)
        measure(figures_of(name, status, health, seen_now.events, restarts, at))
    deployment_id = status.deployment_id if status else (deployment.deployment_id if deployment else None)
    held = verdict in DOWN and hold_state(control.read_hold()) is None
    condition = _condition(verdict, deployment_id, held)
    before = seen_now.seen if seen_now.seen is not None else _caught_up(control, read_seen(control))
    again = _again(control, before, condition, health, held, deployment_id, at)
    if before is not None and before.condition == condition and not again:
        seen_now.seen = before
        return None
    kept = before.unresolved if before else ""  # through starting, stopping, stopped
    unresolved = str(verdict) if verdict in EVENTS else "" if verdict in OK else kept
    seen = Seen(
        seq=(before.seq if before else 0) + 1,
        condition=condition,
        verdict=str(verdict),
        deployment_id=deployment_id,
        held=held,
        at=at,
        unresolved=unresolved,
    )
    if not _claim(control, seen):
        seen_now.seen = None  # another watcher is ahead: read what it recorded next time
        return None
    control.write_json(control.WATCH, seen.to_json())
    seen_now.seen = seen
    event = _event(verdict, before, held, deployment_id)
    if event is None:
        return None
    reason = health.reason + ("; still down, nothing answered it" if again else "")
    return Change(
        name,
        control.url,
        checkpoint,
        event,
        str(verdict),
        reason,
        deployment_id,
        before.verdict if before else None,
        seen.seq,
    )


def _again(
    control: ControlArea,
    before: Seen | None,
    condition: str,
    health: Health,
    held: bool,
    deployment_id: str | None,
    at: float,
) -> bool:
    """A job still down in the same condition, nothing holding or answering it for a while: said once more."""
    return (
        before is not None
        and before.condition == condition
        and health.verdict in DOWN
        and not held
        and at - before.at > RESEND_AFTER_S
        and _unanswered(control, health, deployment_id, at)
    )


def _restarts_in_window(control: ControlArea, seen: Sighting, at: float) -> int | None:
    """The restarts within the job's ``restart.within``, the supervisor's and the driver's own (None when its
    spec cannot be read)."""
    try:
        restart = parse_part(Restart, seen.spec or {}, "restart")
    except SpecError:
        return None
    status = seen.status
    return supervision_of(control, seen).counted(restart.within_s, status.query_restarts if status else (), at)


def sweep(
    jobs: Iterable[tuple[str, str, str]],
    at: float | None = None,
    measure: Measure | None = None,
    memory: Memory | None = None,
) -> list[Change]:
    """Every change of health among ``jobs`` (``(name, control area, checkpoint)``), each job's figures to
    ``measure``; a job whose records cannot be read is logged and skipped, never the end of the sweep. With
    ``memory`` (the watcher's, kept between sweeps: memory.py) a sweep reads only what changed."""
    changes = []
    jobs = list(jobs)
    if memory is not None:
        memory.only(url for _, url, _ in jobs)
    for name, control_url, checkpoint in jobs:
        try:
            change = watch_job(name, ControlArea(control_url), checkpoint, at, measure, memory)
        except (AsyncStreamError, OSError, ValueError) as exc:
            said = record_unreadable(ControlArea(control_url), exc, "watcher") if unreadable(exc) else exc
            _log.warning("%s (%s): not watched this sweep: %s", name, control_url, said)
            if memory is not None:
                memory.forget(control_url)
            continue
        if change is not None:
            changes.append(change)
    return changes
