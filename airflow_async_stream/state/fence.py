"""Fencing: a hold's token, checked immediately before every action that changes a job.

A hold (hold.py) alone is not enough: a step that took it, then spends seconds
stopping the old driver, would not notice that a forced stop ended its hold meanwhile, and would launch a
new driver over the user's stop. So every hold carries a token, a number in ``fence.json`` that only grows:
each new holder and each revocation bump it. A step checks the token it was granted against the current one
right before it acts (a spark-submit or cluster submit, removing a stop request, writing a switch
request, a rollback's redeploy); a stale token raises HoldRevokedError naming who ended the hold, and
nothing changes. On local disks the check and the action run under the hold's ``flock``, which a revocation
also takes, so no revocation falls between them.

No client-side check covers the launch itself (a forced stop landing after spark-submit started). The
driver closes that window: the deployment record carries its token, and a driver that starts after a forced
stop ended the hold of its token (or a later one), whose deployment is no longer the current one, or that
finds a stop request written after its deployment, stops before its first micro-batch and says why in its
status (``start_refusal``).

On object stores there is no ``flock``: there each token is claimed by creating ``fence/<token>`` with the
store's conditional create (fsspec ``pipe_file(mode="create")``: S3 ``If-None-Match: *`` in s3fs, a
generation precondition in gcsfs), so of two holders that read the same token only one gets the next; the
other fails as if the job were held. The current token is the newest claim (the newest 32 are kept). A check
and the action after it are two requests there, so a revocation may fall between them: the driver's own
check is what catches that.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError, HoldRevokedError, JobHeldError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Deployment, Revocation, State, now
from airflow_async_stream.state.storage import open_local
from airflow_async_stream.state.typed import MAX_INT

__all__ = [
    "Fence",
    "create_once",
    "current_token",
    "ended_by",
    "revocations",
    "guard",
    "revoked_since",
    "start_refusal",
]


#: On object stores: the folder of claimed tokens, and how many of the newest are kept.
CLAIMS = "fence"
KEPT_CLAIMS = 32


def current_token(control: ControlArea) -> int:
    """The newest hold's token (0 where no hold of this release was ever taken)."""
    record = control.read_json(ControlArea.FENCE) or {}
    try:
        token = int(record.get("token") or 0)
    except (TypeError, ValueError):
        raise ControlAreaError(f"{control.url}/{ControlArea.FENCE} holds no number as its token") from None
    if not 0 <= token <= MAX_INT:
        raise ControlAreaError(f"{control.url}/{ControlArea.FENCE}: token {token} is out of range (0 to {MAX_INT})")
    return token if control.is_local else max(token, _newest_claim(control))


def bump(control: ControlArea, why: str, seen: int | None = None, revocation: bool = False) -> int:
    """Move the fence on (a new holder, a revocation): every token granted before is stale from now on.

    ``seen``: the token the caller read when it decided (a take reads it with the hold); on an object store
    the next one is claimed with a conditional create, and JobHeldError says another holder claimed it
    first. On local disks the caller holds the hold's guard. A ``revocation`` is remembered apart
    (``revoked``, ``revoked_why``): a launching driver stops for a forced stop, not for a holder that took
    over from one that died.
    """
    record = control.read_json(ControlArea.FENCE) or {}
    token = (current_token(control) if seen is None else seen) + 1
    if not control.is_local:
        _claim(control, token, why)
    revoked: dict[str, Any] = (
        {"revoked": token, "revoked_why": why}
        if revocation
        else {k: record[k] for k in ("revoked", "revoked_why") if k in record}
    )
    control.write_json(ControlArea.FENCE, {"token": token, "why": why, "at": now(), **revoked})
    return token


def revoked_since(control: ControlArea, token: int) -> str | None:
    """Why a forced stop ended the hold of ``token`` or a later one (None: none did since ``token``)."""
    record = control.read_json(ControlArea.FENCE) or {}
    try:
        revoked = int(record.get("revoked") or 0)
    except (TypeError, ValueError):
        raise ControlAreaError(f"{control.url}/{ControlArea.FENCE} holds no number as its revoked token") from None
    return str(record.get("revoked_why")) if revoked > token else None


def _claims(control: ControlArea) -> list[int]:
    where = control.path(CLAIMS)
    control.fs.invalidate_cache(where)  # clients cache listings; another worker may have claimed since
    try:
        names = control.fs.ls(where, detail=False)
    except FileNotFoundError:
        return []
    return sorted(int(name) for name in (posixpath.basename(n.rstrip("/")) for n in names) if name.isdigit())


def _newest_claim(control: ControlArea) -> int:
    claims = _claims(control)
    return claims[-1] if claims else 0


def _create(fs: Any, path: str, payload: bytes) -> None:
    """Write ``path`` only if it does not exist: the store's conditional create, or, where the fsspec driver
    has none (it refuses the mode), an existence check before the write (best-effort: README)."""
    try:
        fs.pipe_file(path, payload, mode="create")
    except (ValueError, NotImplementedError, TypeError):
        if fs.exists(path):
            raise FileExistsError(path) from None
        fs.pipe_file(path, payload)


def create_once(control: ControlArea, name: str, payload: bytes) -> None:
    """Create the control area's file ``name`` only if it does not exist (FileExistsError otherwise): ``O_EXCL``
    on local disks, the store's conditional create elsewhere."""
    path = control.path(name)
    if not control.is_local:
        _create(control.fs, path, payload)
        return
    os.makedirs(posixpath.dirname(path), exist_ok=True)
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644), "wb") as fh:
        fh.write(payload)


def _claim(control: ControlArea, token: int, why: str) -> None:
    """Create ``fence/<token>`` only if nobody has: the store's conditional create decides between holders."""
    payload = json.dumps({"token": token, "why": why, "at": now()}).encode()
    try:
        _create(control.fs, control.path(f"{CLAIMS}/{token}"), payload)
    except FileExistsError:
        raise JobHeldError(
            f"{control.url}: another holder took the job at the same moment (it claimed token {token} first)"
        ) from None
    for old in _claims(control):
        if old <= token - KEPT_CLAIMS:
            control.fs.rm_file(control.path(f"{CLAIMS}/{old}"))


def revocations(control: ControlArea) -> dict[str, Revocation]:
    """The holders a forced stop ended (``revoked-holds.json``), each with who and why; ControlAreaError naming
    the file when it cannot be read."""
    where = f"{control.url}/{ControlArea.REVOKED_HOLDS}"
    holders = (control.read_json(ControlArea.REVOKED_HOLDS) or {}).get("holders") or {}
    if not isinstance(holders, dict):
        raise ControlAreaError(f"{where}: holders should be an object, found {type(holders).__name__}")
    return {name: Revocation.from_json(entry, f"{where} (holder {name[:80]!r})") for name, entry in holders.items()}


def ended_by(control: ControlArea, holder: str, token: int) -> str:
    """Who ended ``holder``'s hold of ``token``, for the error its next action raises."""
    revoked = revocations(control).get(holder)
    if revoked:
        return f"{revoked.by} at {revoked.at_text} ({revoked.reason})"
    fence = control.read_json(ControlArea.FENCE) or {}
    return f"{fence.get('why') or 'a later holder'} (token {fence.get('token')}, this hold's was {token})"


@contextlib.contextmanager
def guard(control: ControlArea) -> Iterator[None]:
    """Serialise hold and token updates between processes of this host (released by the kernel if we die)."""
    if not control.is_local:
        yield
        return
    control.ensure()
    with open_local(control.path(ControlArea.HOLD_GUARD), "ab") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


@dataclass(frozen=True)
class Fence:
    """What one holder was granted on one job: checked right before each action that changes the job."""

    control: ControlArea
    holder: str
    token: int

    def check(self) -> None:
        """Raise HoldRevokedError, changing nothing, when a forced stop or a later holder moved the fence on."""
        if current_token(self.control) != self.token:
            raise HoldRevokedError(
                f"{self.holder} may no longer change {self.control.url}: its hold was ended by "
                f"{ended_by(self.control, self.holder, self.token)}; the job is left as that stop left it"
            )

    @contextlib.contextmanager
    def guarded(self) -> Iterator[None]:
        """Check, then run the block's action before any revocation can land (on local disks, under the
        hold's guard, which revocations also take; elsewhere the driver's own check is the backstop)."""
        with guard(self.control):
            self.check()
            yield


@dataclass(frozen=True)
class Refusal:
    """Why a driver must not start its query: the state it ends in, and the reason its status gives."""

    state: str
    reason: str


def start_refusal(control: ControlArea, deployment_id: str) -> Refusal | None:
    """Why the driver of ``deployment_id`` must not start (None: it may), read just before its query starts.

    Its deployment is no longer the current one (another deploy replaced it while it launched); or it was
    never confirmed running and a forced stop ended the hold that launched it (or a later one); or a stop
    request came after it was deployed. A holder that took over from one that died (a re-run after a worker
    was lost) does not stop it: that holder finds it running and takes it as it is. A deployment that once
    ran (a cluster manager's new attempt) is not held to the token: its deployer let it go long ago.
    """
    record = control.read_deployment()
    if record is not None and record.deployment_id != deployment_id:
        return Refusal(State.SUPERSEDED, f"deployment {record.deployment_id} replaced it before its query started")
    try:
        stop = control.read_json(ControlArea.STOP_REQUEST)
    except ControlAreaError:
        stop = None
    if stop and _after(stop, record, deployment_id):
        return Refusal(
            State.STOPPED,
            f"stopped before its query started: a stop was requested while it launched "
            f"({stop.get('reason')}, from {stop.get('requested_from')})",
        )
    if record is not None and record.confirmed_at is None and record.hold_token is not None:
        revoked = revoked_since(control, record.hold_token)
        if revoked:
            return Refusal(
                State.STOPPED,
                "stopped before its query started: the hold that deployed it (token "
                f"{record.hold_token}) was ended: {revoked}",
            )
    return None


def _after(stop: dict[str, Any], record: Deployment | None, deployment_id: str) -> bool:
    """The stop request is this deployment's, or came after it was deployed (meant for whatever runs)."""
    if stop.get("deployment_id") == deployment_id:
        return True
    deployed_at = record.deployed_at if record else None
    return bool(deployed_at and float(stop.get("requested_at") or 0) >= deployed_at)
