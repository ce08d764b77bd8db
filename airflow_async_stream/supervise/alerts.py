"""What needs a person, said once per incident, and its recovery, said once too.

The supervisor's run fails with one line per such job (the job, what is wrong, the doctor's diagnosis, the
cure), so whatever notifier the DAG's ``on_failure_callback`` names alerts once. Each line is claimed by a
conditional create of ``alerts/<key>`` in the job's control area, naming the run that claimed it: a later run (a
repeated event, a run by hand, the next poll's look) finds it claimed and stays silent, while a retry of the
claiming run says it again, so that run fails at its last try and the notifier is called once. When the job
is healthy again, each of its open alerts gets a ``<key>.recovered`` claim the same way.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import create_once
from airflow_async_stream.state.records import now

__all__ = ["ALERTS", "KEPT_ALERTS", "Alert", "open_alerts", "recovered_key", "say_once"]

ALERTS = "alerts"
RECOVERED = ".recovered"
#: Recovered alerts a job keeps (their claims); older ones are removed, open ones never.
KEPT_ALERTS = 50


@dataclass(frozen=True)
class Alert:
    """One thing a person must look at: its key (the deployment, the kind, when it began) and its line."""

    key: str
    line: str

    @classmethod
    def of(cls, deployment_id: str | None, kind: str, since: float | None, line: str) -> Alert:
        when = f".{int(since * 1000)}" if kind == "stalled" and since else ""  # a deployment may stall twice
        return cls(f"{deployment_id or 'undeployed'}.{kind}{when}", line)


def say_once(control: ControlArea, key: str, line: str, run: str) -> str | None:
    """The line ``run`` says for ``key``: ``line`` when it claims the key now, the line it claimed it with before
    (a retry says the same again), None when another run did."""
    payload = json.dumps({"run": run, "at": now(), "line": line}).encode()
    try:
        create_once(control, f"{ALERTS}/{key}", payload)
    except FileExistsError:
        claim = _claim(control, key)
        return str(claim.get("line")) if claim.get("run") == run else None
    _prune(control)
    return line


def open_alerts(control: ControlArea, run: str = "") -> list[str]:
    """The keys of the job's alerts not yet said recovered (or said so by ``run``: its retry), oldest first."""
    names = _names(control)
    keys = [n for n in names if not n.endswith(RECOVERED)]
    return sorted(k for k in keys if k + RECOVERED not in names or _claim(control, k + RECOVERED).get("run") == run)


def _claim(control: ControlArea, name: str) -> dict[str, Any]:
    """A claim's record; empty when it is gone or torn (then said already by whoever wrote it)."""
    try:
        claim = json.loads(control.read_bytes(f"{ALERTS}/{name}"))
    except (FileNotFoundError, ValueError):
        return {}
    return claim if isinstance(claim, dict) else {}


def recovered_key(key: str) -> str:
    return key + RECOVERED


def _names(control: ControlArea) -> set[str]:
    where = control.path(ALERTS)
    control.fs.invalidate_cache(where)
    try:
        return {posixpath.basename(n.rstrip("/")) for n in control.fs.ls(where, detail=False)}
    except FileNotFoundError:
        return set()


def _prune(control: ControlArea) -> None:
    """Keep the newest KEPT_ALERTS recovered alerts (keys begin with their deployment id, which begins with its
    UTC time, so they sort oldest first)."""
    names = _names(control)
    done = sorted(n for n in names if not n.endswith(RECOVERED) and n + RECOVERED in names)
    for key in done[: max(0, len(done) - KEPT_ALERTS)]:
        for name in (key + RECOVERED, key):
            control.fs.rm_file(control.path(f"{ALERTS}/{name}"))
