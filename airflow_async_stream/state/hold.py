"""Who may change a job right now: a hold in the job's control area.

One holder at a time (an Airflow DAG run, or a command-line process) may deploy, stop or migrate a job.
Another holder fails fast, told who holds the job and until when. The same holder may take the hold again
(a retried task, or the next step of the same migration), which also extends it. A hold ends when its
holder releases it, when it expires (every step renews it for as long as that step may take), or at once
when its holder was a process on this host that has exited, or a DAG run that Airflow says has finished.

Each hold carries a fencing token (fence.py): every new holder and every revocation bump it, and a holder
checks its token right before each action that changes the job, so a revocation stops a step even in the
middle of it, not only at its next take.

A forced stop (``stop --force``) may end another holder's live hold: that holder is then listed in
``revoked-holds.json`` (the newest 32 are kept), the fence moves on, and no later action of it changes
anything, so a migration never redeploys a job the user has just stopped.

On local storage the read-check-write runs under ``flock`` on ``.hold.lock``, so two contenders on one
host cannot both win. On object stores the token is claimed with the store's conditional create (fence.py),
so of two contenders that read the same state only one gets a token; the other fails as if the job were held.
"""

from __future__ import annotations

import contextlib
import os
import socket
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError, HoldRevokedError, JobHeldError
from airflow_async_stream.state import fence
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import guard
from airflow_async_stream.state.liveness import local_pid_alive
from airflow_async_stream.state.records import Hold, Revocation, now

__all__ = [
    "Grant",
    "Holder",
    "dag_run_lookup",
    "guard",
    "held",
    "hold_state",
    "release",
    "revoke",
    "revoked_error",
    "take",
]

MAX_REVOKED = 32
#: How many kinds of change ``dag-runs.json`` remembers.
KINDS_KEPT = 8


@dataclass(frozen=True)
class Holder:
    """Who takes the hold: ``name`` identifies it across retries (e.g. ``dag_id/run_id``)."""

    name: str
    purpose: str
    pid: int | None = None
    dag_id: str | None = None
    run_id: str | None = None

    @classmethod
    def this_process(cls, purpose: str) -> Holder:
        return cls(f"process {os.getpid()} on {socket.gethostname()}", purpose, os.getpid())

    @classmethod
    def for_task(cls, context: Any, purpose: str) -> Holder:
        """The DAG run a task belongs to (so its retries and sibling steps share the hold), else this process."""
        ti = context.get("ti") if context else None
        if ti is None:
            return cls.this_process(purpose)
        return cls(f"DAG run {ti.dag_id}/{ti.run_id}", purpose, dag_id=ti.dag_id, run_id=ti.run_id)


@dataclass(frozen=True)
class Grant:
    """What a take gave: the hold's fencing token, and whether it was newly taken (False: renewed)."""

    control: ControlArea
    holder: str
    token: int
    new: bool

    @property
    def fence(self) -> fence.Fence:
        return fence.Fence(self.control, self.holder, self.token)

    def check(self) -> None:
        """Raise HoldRevokedError, changing nothing, when the hold was ended or taken over (see fence.py)."""
        self.fence.check()

    def guarded(self) -> contextlib.AbstractContextManager[None]:
        """Check, then run the block's writes before any revocation can land (see fence.py)."""
        return self.fence.guarded()


#: Asks Airflow for a DAG run's state (e.g. ``RuntimeTaskInstance.get_dagrun_state``); None when unknown.
DagRunLookup = Callable[[str, str], "str | None"]


def dag_run_lookup(context: Mapping[str, Any] | None) -> DagRunLookup | None:
    """How a task asks Airflow for a DAG run's state: its task instance's ``get_dagrun_state`` (None outside a
    task, e.g. a bare ``execute({})``)."""
    ti = context.get("ti") if context else None
    return getattr(ti, "get_dagrun_state", None)


_LIVE_RUN_STATES = frozenset({"queued", "running"})


def hold_state(hold: Hold | Mapping[str, Any] | None, dag_run_lookup: DagRunLookup | None = None) -> str | None:
    """Why a hold no longer holds ('expired', 'holder exited', 'holder run is failed'), or None while it does."""
    if not hold:
        return "absent"
    if not isinstance(hold, Hold):
        hold = Hold.from_json(hold, "the hold")
    if float(hold.expires_at or 0) <= now():
        return "expired"
    if hold.pid and hold.host == socket.gethostname() and not local_pid_alive(int(hold.pid)):
        return "holder exited"
    if dag_run_lookup and hold.dag_id and hold.run_id:
        try:
            state = dag_run_lookup(hold.dag_id, hold.run_id)
        except Exception:  # noqa: BLE001 - an unreachable API must not free a hold: keep it
            state = None
        state = getattr(state, "value", state)  # Airflow's DagRunState enum prints as "DagRunState.RUNNING"
        if state and str(state).lower() not in _LIVE_RUN_STATES:
            return f"holder run is {state}"
    return None


def take(control: ControlArea, holder: Holder, ttl_s: float, dag_run_lookup: DagRunLookup | None = None) -> Grant:
    """Take or renew the hold for ``ttl_s`` seconds; its Grant says whether it was newly taken and carries
    the hold's fencing token (a new holder's bumps the fence; a renewal keeps its token).

    Raises JobHeldError naming the current holder when someone else holds a live hold. With
    ``dag_run_lookup``, a hold whose DAG run has finished (e.g. failed after a crash) counts as ended.
    """
    with guard(control):
        revoked = revoked_error(control, holder)
        if revoked:
            raise revoked
        seen = fence.current_token(control)  # read with the hold: on object stores the claim of seen+1 decides
        current = control.read_hold()
        ours = current is not None and current.holder == holder.name
        ended = hold_state(current, None if ours else dag_run_lookup)
        if current and ended is None and not ours:
            raise JobHeldError(
                f"{control.url} is held by {current.holder} ({current.purpose}) since "
                f"{current.acquired_at_text}, until {current.expires_at_text} unless released earlier"
            )
        renewing = current is not None and ended is None and ours
        acquired = current.acquired_at if renewing and current else now()
        expires = now() + ttl_s
        if renewing and current:  # a step renewing its run's hold never shortens it
            expires = max(expires, current.expires_at)
        if renewing and current and current.token == seen:
            token = current.token
        else:
            token = fence.bump(control, f"taken by {holder.name} ({holder.purpose})", seen)
        control.write_hold(
            Hold(
                holder=holder.name,
                purpose=holder.purpose,
                host=socket.gethostname(),
                pid=holder.pid,
                dag_id=holder.dag_id,
                run_id=holder.run_id,
                acquired_at=acquired,
                expires_at=expires,
                acquired_at_text=_text(acquired),
                expires_at_text=_text(expires),
                token=token,
            )
        )
        if not renewing and holder.dag_id:
            _remember(control, holder)
        return Grant(control, holder.name, token, not renewing)


def _remember(control: ControlArea, holder: Holder) -> None:
    """Note the DAG run that took the hold, per kind of change (the purpose's first word: deploy, stop,
    safe-disable, rollout): the jobs page links to the DAGs that change the job. At most ``KINDS_KEPT``."""
    kind = (holder.purpose or "change").split()[0]
    try:
        runs = control.read_json(ControlArea.DAG_RUNS) or {}
    except ControlAreaError:
        runs = {}  # a torn note is only a note: the hold must not fail for it
    runs = {k: v for k, v in runs.items() if k != kind} | {
        kind: {"dag_id": holder.dag_id, "run_id": holder.run_id, "at": now()}
    }
    control.write_json(ControlArea.DAG_RUNS, dict(list(runs.items())[-KINDS_KEPT:]))


def revoked_error(control: ControlArea, holder: Holder) -> HoldRevokedError | None:
    """The error of a holder whose hold a forced stop ended (None if it was not): for its next take, and for
    a wait of its that ended because the job stopped, so the step says who stopped it."""
    revoked = fence.revocations(control).get(holder.name)
    if not revoked:
        return None
    return HoldRevokedError(
        f"{holder.name} may no longer change {control.url}: its hold was ended by {revoked.by} at "
        f"{revoked.at_text} ({revoked.reason}); the job is left as that stop left it"
    )


def revoke(control: ControlArea, by: Holder, reason: str) -> Hold | None:
    """End another holder's live hold for good (a forced stop); return that hold, or None when there was none.

    The fence moves on first, so every action of the revoked holder fails its check from then on; its next
    take fails with HoldRevokedError too. A forced stop does not give up to a holder that claimed a token at
    the same moment (object stores): it reads again and revokes that one.
    """
    for attempt in range(_REVOKE_ATTEMPTS):
        try:
            return _revoke(control, by, reason)
        except JobHeldError:
            if attempt == _REVOKE_ATTEMPTS - 1:
                raise
    return None


_REVOKE_ATTEMPTS = 3


def _revoke(control: ControlArea, by: Holder, reason: str) -> Hold | None:
    with guard(control):
        seen = fence.current_token(control)
        try:
            holders = fence.revocations(control)
        except ControlAreaError:  # a damaged list of earlier revocations must not keep a forced stop from winning
            holders = {}
            control.write_json(ControlArea.REVOKED_HOLDS, {"holders": {}})
        try:
            current = control.read_hold()
        except ControlAreaError as exc:  # hand-written or damaged: it must not keep a forced stop from winning
            fence.bump(control, f"an unreadable hold was ended by {by.name} ({reason}): {exc}", seen, revocation=True)
            control.remove(ControlArea.HOLD)
            return Hold(holder="an unreadable hold", purpose=str(exc))
        if not current or hold_state(current) is not None or current.holder == by.name:
            return None
        fence.bump(control, f"the hold of {current.holder} was ended by {by.name} ({reason})", seen, revocation=True)
        at = now()
        holders[current.holder] = Revocation(by=by.name, reason=reason, at=at, at_text=_text(at))
        newest = sorted(holders.items(), key=lambda item: item[1].at)[-MAX_REVOKED:]
        control.write_json(ControlArea.REVOKED_HOLDS, {"holders": {k: v.to_json() for k, v in newest}})
        control.remove(ControlArea.HOLD)
        return current


def release(control: ControlArea, holder: Holder) -> None:
    """Give the hold up if this holder has it (never someone else's)."""
    with guard(control):
        current = control.read_hold()
        if current and current.holder == holder.name:
            control.remove(ControlArea.HOLD)


@contextlib.contextmanager
def held(
    control: ControlArea, holder: Holder, ttl_s: float, dag_run_lookup: DagRunLookup | None = None
) -> Iterator[Grant]:
    """Take the hold for a block, which gets the Grant (its token fences the block's actions); release it
    afterwards only if this block took it (not if it renewed a hold its holder already had, e.g. inside a
    migration)."""
    grant = take(control, holder, ttl_s, dag_run_lookup)
    try:
        yield grant
    finally:
        if grant.new:
            release(control, holder)


def _text(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
