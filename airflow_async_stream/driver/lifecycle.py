"""Waiting on a driver through its control area: until it runs, and until it stops.

Airflow-free, so operators, the CLI and tests share one implementation. Every wait logs its progress.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.driver.launcher import Launcher
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.log import tail_lines
from airflow_async_stream.driver.process import DriverProcess
from airflow_async_stream.exceptions import (
    DriverFailedError,
    DriverStartTimeoutError,
    NotSignalledError,
    StopTimeoutError,
)
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import FINAL_STATES, SUBMITTED, Deployment, State, Status, now

__all__ = ["StopOutcome", "log_tail", "stop_driver", "wait_for_driver_exit", "wait_until_running"]

_log = logging.getLogger(__name__)
#: How often a wait reads the status record: often on a local disk (a read costs microseconds, and a
#: deploy or stop ends sooner), less often on remote storage, where each read is a request.
POLL_S = 0.1
REMOTE_POLL_S = 0.5
REPORT_EVERY_S = 10.0


def log_tail(control: ControlArea, lines: int = 30) -> str:
    """The end of the driver log, for error messages (empty when there is none).

    The log is in the control area, or, for a driver of this host whose control area is remote, on
    this host where the deployment record says; a log just rotated is read on into its previous file.
    """
    deployment = control.read_deployment()
    driver = (deployment.driver if deployment else None) or {}
    local_log = driver.get("log") if driver.get("log_on_host") else None
    if local_log:
        return tail_lines(_read_local, local_log, lines)
    return tail_lines(control.read_bytes, ControlArea.DRIVER_LOG, lines)


def _read_local(path: str) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


def _poll_s(control: ControlArea) -> float:
    return POLL_S if control.is_local else REMOTE_POLL_S


def _status_of(control: ControlArea, deployment_id: str) -> Status | None:
    status = control.read_status()
    if status and status.deployment_id == deployment_id:
        return status
    return None


def wait_until_running(
    control: ControlArea,
    deployment_id: str,
    driver: dict[str, Any] | None,
    timeout_s: float,
    log: logging.Logger = _log,
    sleep: Callable[[float], None] = time.sleep,
    launcher: Launcher | None = None,
) -> Status:
    """Wait for the query's first progress (or idle) event; fail fast with the driver's own error.

    ``launcher`` (default: this host's) is asked whether ``driver`` (the deployment record's) ended: its
    spark-submit on this host exiting, or its cluster manager ending it, fails the wait at once instead of
    at the timeout.
    """
    launcher = launcher or LocalLauncher()
    start = time.monotonic()
    next_report = start + REPORT_EVERY_S
    while True:
        status = _status_of(control, deployment_id)
        state = status.state if status else "submitted"
        if status and state == State.FAILED:
            raise DriverFailedError(f"the driver failed: {status.error}")
        if status and state == State.RUNNING and (status.batches or status.idle_at):
            return status
        if status and state in FINAL_STATES:
            why = status.stop_reason or "before its query ran"
            raise DriverFailedError(f"the driver ended ({state}): {why}")
        ended = launcher.ended(driver) if driver is not None else None
        if ended:
            status = _status_of(control, deployment_id)
            if status and status.state == State.FAILED:
                raise DriverFailedError(f"the driver failed: {status.error}")
            raise DriverFailedError(f"{ended} before the query ran; end of its log:\n{log_tail(control)}")
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
    """How a stop went: whether a driver was live when asked, its final status record, and, when its
    process on this host had not exited by the stop's time limit, that process's pid."""

    was_live: bool
    status: Status | None
    exiting_pid: int | None = None

    def raise_unless_stopped(self, job: str, kill_after_s: float) -> None:
        """Fail when the driver's process is still exiting, or when it failed instead of stopping."""
        if self.exiting_pid:
            raise StopTimeoutError(
                f"job {job!r} stopped its query, but its driver process (pid {self.exiting_pid}) is "
                f"still exiting {kill_after_s:.0f} s after the stop request"
            )
        if self.was_live and self.status and self.status.state == State.FAILED:
            raise DriverFailedError(f"job {job!r} did not stop cleanly: {self.status.error}")


def stop_driver(
    control: ControlArea,
    reason: str,
    graceful_timeout_s: float = 60.0,
    kill_after_s: float = 120.0,
    log: logging.Logger = _log,
    sleep: Callable[[float], None] = time.sleep,
    launcher: Launcher | None = None,
) -> StopOutcome:
    """Ask the live driver to stop between micro-batches and wait for its final status.

    A driver process this host launched is then awaited until it has exited, so a deploy right after
    never overlaps it (still there ``kill_after_s`` after the request: the outcome names its pid).
    A driver that has not stopped ``kill_after_s`` seconds after the request is killed by ``launcher``
    (default: this host's, which kills only a process it provably launched; a cluster launcher also kills
    on its cluster), and its status is rewritten to say so; any other raises StopTimeoutError naming
    where to stop it from.
    """
    launcher = launcher or LocalLauncher()
    status = control.read_status()
    judged = liveness(status)
    if not judged.live:
        launching = _launching(control, status, launcher)
        if launching is not None:
            return _stop_launching(control, launching, reason, graceful_timeout_s, kill_after_s, log, sleep, launcher)
        log.info("Nothing to stop for %s: %s", control.url, judged.reason)
        return StopOutcome(False, status)
    assert status is not None
    deployment_id = status.deployment_id
    control.request_stop(deployment_id, reason, graceful_timeout_s)
    log.info("Requested a graceful stop of deployment %s (%s)", deployment_id, reason)
    start = time.monotonic()
    next_report = start + REPORT_EVERY_S
    while True:
        status = _status_of(control, deployment_id) or status
        if status.state in FINAL_STATES:
            log.info("Deployment %s is %s", deployment_id, status.state)
            left_s = max(0.0, start + kill_after_s - time.monotonic())
            exiting = wait_for_driver_exit(control, left_s, log, sleep, deployment_id)
            return StopOutcome(True, status, exiting)
        judged = liveness(status)
        if not judged.live:
            why = f"the driver disappeared while stopping ({judged.reason})"
            return StopOutcome(True, _record_lost(control, status, why))
        elapsed = time.monotonic() - start
        if elapsed > kill_after_s:
            return StopOutcome(True, _kill(control, status, kill_after_s, launcher))
        if time.monotonic() >= next_report:
            log.info(
                "Waiting for deployment %s to stop: state %s, %.0f s elapsed",
                deployment_id,
                status.state,
                elapsed,
            )
            next_report += REPORT_EVERY_S
        sleep(_poll_s(control))


#: A deployment record newer than the status, with no driver named yet, counts as launching this long.
LAUNCH_WINDOW_S = 60.0


def _launching(control: ControlArea, status: Status | None, launcher: Launcher) -> Deployment | None:
    """The newest deployment when it is submitted but its driver has not reported yet (the status still
    names an earlier deployment, or none): a stop must reach it too, or it would run on after "stopped"."""
    record = control.read_deployment()
    if (
        record is None
        or record.state != SUBMITTED
        or record.confirmed_at is not None
        or (status and status.deployment_id == record.deployment_id)
    ):
        return None
    driver = record.driver
    if driver is None:
        return record if now() - float(record.deployed_at or 0) < LAUNCH_WINDOW_S else None
    if launcher.ended(driver):
        return None  # its spark-submit exited (or its cluster ended it) without a word: nothing launches
    return record


def _stop_launching(
    control: ControlArea,
    record: Deployment,
    reason: str,
    graceful_timeout_s: float,
    kill_after_s: float,
    log: logging.Logger,
    sleep: Callable[[float], None],
    launcher: Launcher,
) -> StopOutcome:
    """Stop a deployment whose driver is launching: its stop request names it, and the driver, which reads
    it before its query starts, ends ``stopped``; awaited here like any stop."""
    deployment_id = record.deployment_id
    control.request_stop(deployment_id, reason, graceful_timeout_s)
    log.info("Deployment %s is launching (no status yet): asked it to stop before its query starts", deployment_id)
    deadline = time.monotonic() + kill_after_s
    while True:
        status = _status_of(control, deployment_id)
        if status is not None and status.state in FINAL_STATES:
            left_s = max(0.0, deadline - time.monotonic())
            return StopOutcome(True, status, wait_for_driver_exit(control, left_s, log, sleep, deployment_id))
        if status is not None and liveness(status).live:  # it reports: the usual stop (its request stands)
            left_s = max(0.0, deadline - time.monotonic())
            return stop_driver(control, reason, graceful_timeout_s, left_s, log, sleep, launcher)
        if _launching(control, status, launcher) is None:
            log.info(
                "Deployment %s ended without reporting (its deploy gave up, or its launcher exited)", deployment_id
            )
            return StopOutcome(True, None)
        if time.monotonic() > deadline:
            return _kill_launching(control, deployment_id, kill_after_s, launcher)
        sleep(_poll_s(control))


def _kill_launching(control: ControlArea, deployment_id: str, waited_s: float, launcher: Launcher) -> StopOutcome:
    """A launch that has not reported by the stop's time limit: killed if its launcher can, else left to its
    stop request (its driver reads it before its query starts)."""
    driver = _driver_of(control, deployment_id)
    try:
        if driver is None:
            raise NotSignalledError("no driver is named yet")
        launcher.kill(driver)
    except NotSignalledError as exc:
        raise StopTimeoutError(
            f"deployment {deployment_id} was launching and has not reported {waited_s:.0f} s after the stop "
            f"request ({exc}); the request stands, so its driver stops before its query starts"
        ) from None
    return StopOutcome(True, None)


def _record_lost(control: ControlArea, status: Status, why: str) -> Status:
    final = status.but(state=State.FAILED, error=why, finished_at=now())
    control.write_status(final)
    return final


def _driver_of(control: ControlArea, deployment_id: str | None = None) -> dict[str, Any] | None:
    """The driver entry of the deployment record (when given, only if the record is that deployment's)."""
    deployment = control.read_deployment()
    if deployment is None or (deployment_id is not None and deployment.deployment_id != deployment_id):
        return None
    return deployment.driver


def wait_for_driver_exit(
    control: ControlArea,
    timeout_s: float,
    log: logging.Logger = _log,
    sleep: Callable[[float], None] = time.sleep,
    deployment_id: str | None = None,
) -> int | None:
    """Wait until the latest deployment's driver process on this host has exited; its pid if it is
    still there after ``timeout_s``. Drivers of other hosts and clusters are not waited for here."""
    driver = _driver_of(control, deployment_id)
    process = DriverProcess.of(driver)
    if process.refusal is not None or not process.alive:
        return None
    deadline = time.monotonic() + timeout_s
    log.info("Waiting for the driver process (pid %s) to exit", process.pid)
    while DriverProcess.of(driver).alive:  # /proc only: the record is read once
        if time.monotonic() >= deadline:
            log.warning("The driver process (pid %s) is still exiting after %.0f s", process.pid, timeout_s)
            return process.pid
        sleep(POLL_S)
    return None


def _kill(control: ControlArea, status: Status, waited_s: float, launcher: Launcher) -> Status:
    deployment_id = status.deployment_id
    driver = _driver_of(control, deployment_id)
    try:
        if driver is None:
            raise NotSignalledError("its deployment record names another deployment")
        done = launcher.kill(driver)
    except NotSignalledError as exc:
        raise StopTimeoutError(
            f"deployment {deployment_id} did not stop within {waited_s:.0f} s and is not signalled from here: {exc}"
        ) from None
    return _record_lost(control, status, f"{done}: no final status {waited_s:.0f} s after the stop request")
