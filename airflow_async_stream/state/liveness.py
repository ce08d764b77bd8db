"""Whether a job's driver is alive, judged from its status record: an active state, a fresh heartbeat, no
exit record of its launching host (from any host: driver/exits.py), and (for a driver of this host) a process
that still runs. A stale heartbeat of a driver whose process runs on this host, its command line naming the
deployment, is a driver that cannot write its records (a full disk), never a crash."""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from airflow_async_stream.state.records import ACTIVE_STATES, DriverExit, Status, now

if TYPE_CHECKING:
    from airflow_async_stream.state.control import ControlArea

__all__ = [
    "CLOCK_SKEW_S",
    "Liveness",
    "command_line",
    "flag",
    "liveness",
    "liveness_of",
    "local_pid_alive",
    "runs_here",
]

#: How far in the future a heartbeat may be (hosts' clocks differ) and still count; beyond, a record is not believed.
CLOCK_SKEW_S = 60.0


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


def command_line(pid: int) -> list[str] | None:
    """The arguments of process ``pid`` of this host, as it was started; None when it cannot be read."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            raw = fh.read()
    except OSError:
        return None
    return [arg.decode("utf-8", "replace") for arg in raw.split(b"\0") if arg]


def flag(argv: list[str], name: str) -> str | None:
    """The value of ``--name VALUE`` (or ``--name=VALUE``) in an argument list, the last one given."""
    found = None
    for i, arg in enumerate(argv):
        if arg == name and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith(name + "="):
            found = arg[len(name) + 1 :]
    return found


def liveness(
    status: Status | Mapping[str, Any] | None,
    stale_after_s: float | None = None,
    exited: DriverExit | None = None,
) -> Liveness:
    """Judge a status record: live only in an active state with a fresh heartbeat (and a living local pid),
    and without ``exited``, the exit record of its deployment's driver (control.py ``read_exit``)."""
    if not status:
        return Liveness(False, "no status record")
    if not isinstance(status, Status):
        status = Status.from_json(status, "the status record")
    state = status.state
    if state not in ACTIVE_STATES:
        return Liveness(False, f"state is {state}")
    if exited and exited.deployment_id == status.deployment_id:
        ago = now() - exited.exited_at
        return Liveness(
            False, f"state is {state} but host {exited.host} recorded {ago:.0f} s ago that its driver exited"
        )
    age = now() - float(status.heartbeat_at or 0)
    if age < -CLOCK_SKEW_S:
        return Liveness(
            False,
            f"state is {state} but the heartbeat is {-age:.0f} s in the future (more than the {CLOCK_SKEW_S:.0f} s "
            "clock skew allowed): not believed",
        )
    if age > (status.stale_after_s if stale_after_s is None else stale_after_s):
        if runs_here(status):  # its records cannot be written (a full disk, a broken file), yet it runs
            return Liveness(
                True,
                f"state is {state}; its last heartbeat is {age:.0f} s old, but its driver "
                f"process {status.pid} runs on this host (its records may not be writable)",
            )
        return Liveness(False, f"state is {state} but the last heartbeat is {age:.0f} s old: the driver is gone")
    pid = status.pid
    if pid and status.host == socket.gethostname() and not local_pid_alive(int(pid)):
        return Liveness(False, f"state is {state} but driver process {pid} on this host has exited")
    return Liveness(True, f"state is {state}, heartbeat {age:.0f} s ago")


def runs_here(status: Status) -> bool:
    """Whether the status's driver process runs on this host: alive, its own command line naming the status's
    deployment (a reused pid or a record's copied fields do not)."""
    pid = status.pid
    if not pid or status.host != socket.gethostname() or not local_pid_alive(int(pid)):
        return False
    argv = command_line(int(pid))
    return argv is not None and flag(argv, "--deployment-id") == status.deployment_id


def liveness_of(control: ControlArea) -> tuple[Status | None, Liveness]:
    """A job's status record and whether its driver is alive, its exit record read only while it says it runs."""
    status = control.read_status()
    exited = control.read_exit(status.deployment_id) if status and status.state in ACTIVE_STATES else None
    return status, liveness(status, exited=exited)
