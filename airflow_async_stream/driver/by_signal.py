"""A person's stop when the job's control area cannot carry one (a folder where a file should be, a full disk,
unreadable records): this host's drivers of that control area, proved by their own processes, are ended by
signal. No record is needed to find them and none is believed: a driver is a launch's process-group leader
whose command line names the control area and a deployment (driver/process.py ``Target``). The runtime stops
its query between micro-batches on SIGTERM; a group still there after the graceful wait is killed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

from airflow_async_stream.driver.process import KILLED_EXIT_S, Target, plain_url, process_group
from airflow_async_stream.state.liveness import command_line, flag, local_pid_alive

__all__ = ["drivers_here", "end_driver"]


def drivers_here(control_url: str) -> list[tuple[int, str]]:
    """The process groups of this host that prove they are a driver of ``control_url``, found from /proc, with
    the deployment each names."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        argv = command_line(int(entry))
        deployment = flag(argv, "--deployment-id") if argv else None
        if deployment and Target(control_url, deployment).unproven(int(entry)) is None:
            found.append((int(entry), deployment))
    return sorted(found)


def end_driver(group: int, control_url: str, graceful_s: float, kill_after_s: float) -> str:
    """SIGTERM the driver of process group ``group`` (its members naming ``control_url``: the runtime's Python,
    which stops between micro-batches), wait ``graceful_s`` for the group to exit, then SIGKILL it; what
    happened, in words."""
    for pid in _members(group, control_url):
        _signal(os.kill, pid, signal.SIGTERM)
    if _exited(group, graceful_s):
        return f"pid {group} stopped on SIGTERM"
    _signal(os.killpg, group, signal.SIGKILL)
    if _exited(group, max(kill_after_s, KILLED_EXIT_S)):
        return f"pid {group} killed after {graceful_s:g} s"
    return f"pid {group} still runs after SIGKILL"


def _members(group: int, control_url: str) -> list[int]:
    """The processes of a proven driver's group that name its control area (spark-submit's, the runtime's)."""
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit() and process_group(int(entry)) == group:
            named = flag(command_line(int(entry)) or [], "--control-area")
            if named is not None and plain_url(named) == plain_url(control_url):
                members.append(int(entry))
    return members or [group]


def _signal(send: Callable[[int, int], None], pid: int, signum: int) -> None:
    try:
        send(pid, signum)
    except ProcessLookupError:
        pass


def _exited(pid: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while local_pid_alive(pid):
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.1)
    return True
