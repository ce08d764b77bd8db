"""Stopping a driver: a graceful stop request through its control area, then (only for a driver this host
launched, or through its cluster's launcher) a kill; also a launch that never reported. A stop reports once
the driver's process has exited, seen from any host (exits.py)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from airflow_async_stream.driver.exits import Exiting, confirm_exit_here, wait_for_driver_exit
from airflow_async_stream.driver.launcher import Launcher
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.poll import poll_interval
from airflow_async_stream.driver.process import Target
from airflow_async_stream.driver.start import status_of
from airflow_async_stream.exceptions import (
    DriverFailedError,
    NotSignalledError,
    StopTimeoutError,
)
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness, liveness_of
from airflow_async_stream.state.records import FINAL_STATES, SUBMITTED, Deployment, Driver, State, Status, now
from airflow_async_stream.waits import Log, WaitLog

__all__ = ["StopOutcome", "stop_driver", "wait_for_driver_exit"]  # the last from exits.py, as before

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StopOutcome:
    """How a stop went: whether a driver was live when asked, its final status record, and, when its
    process had not been seen to exit by the stop's time limit (on this host, or by the host that launched
    it), which and where."""

    was_live: bool
    status: Status | None
    exiting: Exiting | None = None

    @property
    def exiting_pid(self) -> int | None:
        return self.exiting.pid if self.exiting else None

    def raise_unless_stopped(self, job: str, kill_after_s: float) -> None:
        """Fail when the driver's process is still exiting, or when it failed instead of stopping."""
        if self.exiting:
            raise StopTimeoutError(
                f"job {job!r} stopped its query, but {self.exiting.describe()} {kill_after_s:.0f} s after the "
                "stop request"
            )
        if self.was_live and self.status and self.status.state == State.FAILED:
            raise DriverFailedError(f"job {job!r} did not stop cleanly: {self.status.error}")


def stop_driver(
    control: ControlArea,
    reason: str,
    graceful_timeout_s: float = 60.0,
    kill_after_s: float = 120.0,
    log: Log = _log,
    sleep: Callable[[float], None] = time.sleep,
    launcher: Launcher | None = None,
) -> StopOutcome:
    """Ask the live driver to stop between micro-batches and wait for its final status.

    The driver's process is then awaited until it has exited (here in ``/proc``, for another host's driver
    through that host's exit record), so a deploy right after never overlaps it, whichever host it runs on
    (not seen to exit ``kill_after_s`` after the request: the outcome names its pid and host).
    A driver that has not stopped ``kill_after_s`` seconds after the request is killed by ``launcher``
    (default: this host's, which kills only a process it provably launched; a cluster launcher also kills
    on its cluster), and its status is rewritten to say so; any other raises StopTimeoutError naming
    where to stop it from.
    """
    launcher = launcher or LocalLauncher()
    status, judged = liveness_of(control)  # its host's exit record counts too, from any host
    if not judged.live:
        launching = _launching(control, status, launcher)
        if launching is not None:
            return _stop_launching(control, launching, reason, graceful_timeout_s, kill_after_s, log, sleep, launcher)
        log.info("Nothing to stop for %s: %s", control.url, judged.reason)
        confirm_exit_here(control)  # on the host that launched it: a gone driver's exit, for the other hosts
        return StopOutcome(False, status)
    assert status is not None
    control.request_stop(status.deployment_id, reason, graceful_timeout_s)
    log.info("Requested a graceful stop of deployment %s (%s)", status.deployment_id, reason)
    return _await_stopped(control, status, kill_after_s, log, sleep, launcher)


def _await_stopped(
    control: ControlArea,
    status: Status,
    kill_after_s: float,
    log: Log,
    sleep: Callable[[float], None],
    launcher: Launcher,
) -> StopOutcome:
    """Wait for a driver that was live when its stop was requested to reach a final status (then for its
    process's exit), killing it at ``kill_after_s``; it counts as live even if it ends before the first look."""
    deployment_id = status.deployment_id
    start = time.monotonic()
    say = WaitLog(log, f"Waiting for deployment {deployment_id} to stop", kill_after_s, started=start)
    while True:
        status = status_of(control, deployment_id) or status
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
        say(f"state {status.state}")
        sleep(poll_interval(control))


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
    log: Log,
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
        status = status_of(control, deployment_id)
        if status is not None and status.state in FINAL_STATES:
            left_s = max(0.0, deadline - time.monotonic())
            return StopOutcome(True, status, wait_for_driver_exit(control, left_s, log, sleep, deployment_id))
        if status is not None and liveness(status).live:  # it reports: awaited like any stop (its request stands)
            left_s = max(0.0, deadline - time.monotonic())
            return _await_stopped(control, status, left_s, log, sleep, launcher)
        if _launching(control, status, launcher) is None:
            log.info(
                "Deployment %s ended without reporting (its deploy gave up, or its launcher exited)", deployment_id
            )
            return StopOutcome(True, None)
        if time.monotonic() > deadline:
            return _kill_launching(control, deployment_id, kill_after_s, launcher)
        sleep(poll_interval(control))


def _kill_launching(control: ControlArea, deployment_id: str, waited_s: float, launcher: Launcher) -> StopOutcome:
    """A launch that has not reported by the stop's time limit: killed if its launcher can, else left to its
    stop request (its driver reads it before its query starts)."""
    driver = _driver_of(control, deployment_id)
    try:
        if driver is None:
            raise NotSignalledError("no driver is named yet")
        launcher.kill(driver, Target(control.url, deployment_id))
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


def _driver_of(control: ControlArea, deployment_id: str | None = None) -> Driver | None:
    """The driver entry of the deployment record (when given, only if the record is that deployment's)."""
    deployment = control.read_deployment()
    if deployment is None or (deployment_id is not None and deployment.deployment_id != deployment_id):
        return None
    return deployment.driver


def _kill(control: ControlArea, status: Status, waited_s: float, launcher: Launcher) -> Status:
    deployment_id = status.deployment_id
    driver = _driver_of(control, deployment_id)
    try:
        if driver is None:
            raise NotSignalledError("its deployment record names another deployment")
        done = launcher.kill(driver, Target(control.url, deployment_id))
    except NotSignalledError as exc:
        raise StopTimeoutError(
            f"deployment {deployment_id} did not stop within {waited_s:.0f} s and is not signalled from here: {exc}"
        ) from None
    return _record_lost(control, status, f"{done}: no final status {waited_s:.0f} s after the stop request")
