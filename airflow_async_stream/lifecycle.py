"""Waiting on a driver through its control area: until it runs, and until it stops.

Airflow-free, so operators, the CLI and tests share one implementation. Every wait logs its progress.
"""

from __future__ import annotations

import logging
import os
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.control import FINAL_STATES, ControlArea, liveness, local_pid_alive, now
from airflow_async_stream.exceptions import DriverFailedError, DriverStartTimeoutError, StopTimeoutError

__all__ = ["StopOutcome", "log_tail", "stop_driver", "wait_until_running"]

_log = logging.getLogger(__name__)
#: How often a wait reads the status record: often on a local disk (a read costs microseconds, and a
#: deploy or stop ends sooner), less often on remote storage, where each read is a request.
POLL_S = 0.1
REMOTE_POLL_S = 0.5
REPORT_EVERY_S = 10.0
CLUSTER_CHECK_EVERY_S = 5.0
#: YARN application states and Kubernetes pod phases of a driver that is no more.
CLUSTER_ENDED_STATES = frozenset({"FINISHED", "FAILED", "KILLED", "SUCCEEDED"})


def log_tail(control: ControlArea, lines: int = 30) -> str:
    """The end of the driver log, for error messages (empty when there is none).

    The log is in the control area, or, for a driver of this host whose control area is remote, on
    this host where the deployment record says.
    """
    driver = (control.read_json(ControlArea.DEPLOYMENT) or {}).get("driver") or {}
    local_log = driver.get("log") if driver.get("log_on_host") else None
    try:
        if local_log:
            with open(local_log, "rb") as fh:
                raw = fh.read()
        else:
            raw = control.read_bytes(ControlArea.DRIVER_LOG)
    except FileNotFoundError:
        return ""
    text = raw.decode("utf-8", errors="replace")
    return "\n".join(text.splitlines()[-lines:])


def _poll_s(control: ControlArea) -> float:
    return POLL_S if control.is_local else REMOTE_POLL_S


def _status_of(control: ControlArea, deployment_id: str) -> dict[str, Any] | None:
    status = control.read_json(ControlArea.STATUS)
    if status and status.get("deployment_id") == deployment_id:
        return status
    return None


def wait_until_running(
    control: ControlArea,
    deployment_id: str,
    launcher_pid: int | None,
    timeout_s: float,
    log: logging.Logger = _log,
    sleep: Callable[[float], None] = time.sleep,
    cluster_state: Callable[[], str | None] | None = None,
) -> dict[str, Any]:
    """Wait for the query's first progress (or idle) event; fail fast with the driver's own error.

    ``cluster_state`` (a cluster-mode driver) is asked every few seconds, so a driver its cluster
    manager already ended fails the wait at once instead of at the timeout.
    """
    start = time.monotonic()
    next_report = start + REPORT_EVERY_S
    next_cluster_check = start
    while True:
        status = _status_of(control, deployment_id)
        state = status.get("state") if status else "submitted"
        if status and state == "failed":
            raise DriverFailedError(f"the driver failed: {status.get('error')}")
        if status and state == "running" and (status.get("batches") or status.get("idle_at")):
            return status
        if status and state in FINAL_STATES:
            raise DriverFailedError(f"the driver ended ({state}) before its query ran")
        if launcher_pid is not None and not local_pid_alive(launcher_pid):
            status = _status_of(control, deployment_id)
            if status and status.get("state") == "failed":
                raise DriverFailedError(f"the driver failed: {status.get('error')}")
            raise DriverFailedError(
                f"spark-submit (pid {launcher_pid}) exited before the query ran; end of its log:\n{log_tail(control)}"
            )
        if cluster_state is not None and time.monotonic() >= next_cluster_check:
            next_cluster_check = time.monotonic() + CLUSTER_CHECK_EVERY_S
            state_there = cluster_state()
            if state_there and state_there.upper() in CLUSTER_ENDED_STATES:
                status = _status_of(control, deployment_id)
                error = (status or {}).get("error")
                raise DriverFailedError(
                    f"the driver ended on its cluster ({state_there}) before its query ran"
                    + (f": {error}" if error else "")
                )
        elapsed = time.monotonic() - start
        if elapsed > timeout_s:
            raise DriverStartTimeoutError(
                f"the query did not report progress within {timeout_s:.0f} s (state: {state}); "
                f"end of the driver log:\n{log_tail(control)}"
            )
        if time.monotonic() >= next_report:
            log.info("Waiting for the first micro-batch: state %s, %.0f s elapsed", state, elapsed)
            next_report += REPORT_EVERY_S
        sleep(_poll_s(control))


@dataclass(frozen=True)
class StopOutcome:
    """How a stop went: whether a driver was live when asked, and its final status record."""

    was_live: bool
    status: dict[str, Any] | None


def stop_driver(
    control: ControlArea,
    reason: str,
    graceful_timeout_s: float = 60.0,
    kill_after_s: float = 120.0,
    log: logging.Logger = _log,
    sleep: Callable[[float], None] = time.sleep,
    kill_remote: Callable[[dict[str, Any]], None] | None = None,
) -> StopOutcome:
    """Ask the live driver to stop between micro-batches and wait for its final status.

    A driver that has not stopped ``kill_after_s`` seconds after the request is killed, if it was
    launched from this host or ``kill_remote`` can kill it on its cluster (the hook's YARN/Kubernetes
    calls), and its status is rewritten to say so; any other raises StopTimeoutError.
    """
    status = control.read_json(ControlArea.STATUS)
    judged = liveness(status)
    if not judged.live:
        log.info("Nothing to stop for %s: %s", control.url, judged.reason)
        return StopOutcome(False, status)
    assert status is not None
    deployment_id = str(status["deployment_id"])
    control.request_stop(deployment_id, reason, graceful_timeout_s)
    log.info("Requested a graceful stop of deployment %s (%s)", deployment_id, reason)
    start = time.monotonic()
    next_report = start + REPORT_EVERY_S
    while True:
        status = _status_of(control, deployment_id) or status
        if status.get("state") in FINAL_STATES:
            log.info("Deployment %s is %s", deployment_id, status["state"])
            return StopOutcome(True, status)
        judged = liveness(status)
        if not judged.live:
            why = f"the driver disappeared while stopping ({judged.reason})"
            return StopOutcome(True, _record_lost(control, status, why))
        elapsed = time.monotonic() - start
        if elapsed > kill_after_s:
            return StopOutcome(True, _kill(control, status, kill_after_s, kill_remote))
        if time.monotonic() >= next_report:
            log.info(
                "Waiting for deployment %s to stop: state %s, %.0f s elapsed",
                deployment_id,
                status.get("state"),
                elapsed,
            )
            next_report += REPORT_EVERY_S
        sleep(_poll_s(control))


def _record_lost(control: ControlArea, status: dict[str, Any], why: str) -> dict[str, Any]:
    final = dict(status, state="failed", error=why, finished_at=now())
    control.write_json(ControlArea.STATUS, final)
    return final


def _kill(
    control: ControlArea,
    status: dict[str, Any],
    waited_s: float,
    kill_remote: Callable[[dict[str, Any]], None] | None = None,
) -> dict[str, Any]:
    deployment = control.read_json(ControlArea.DEPLOYMENT) or {}
    driver = deployment.get("driver") or {}
    ours = deployment.get("deployment_id") == status.get("deployment_id")
    if ours and kill_remote is not None and driver.get("kind") not in (None, "local-process"):
        kill_remote(driver)
        return _record_lost(
            control, status, f"killed on the cluster: no final status {waited_s:.0f} s after the stop request"
        )
    if not ours or not driver.get("launcher_pid"):
        raise StopTimeoutError(
            f"deployment {status.get('deployment_id')} did not stop within {waited_s:.0f} s and is not "
            "a driver this host launched; stop it with the cluster's tools"
        )
    try:
        os.killpg(int(driver["launcher_pid"]), signal.SIGKILL)  # launched as its own process group
    except ProcessLookupError:
        pass
    return _record_lost(control, status, f"killed: no final status {waited_s:.0f} s after the stop request")
