"""Whether a driver's processes have exited, as every host sees it.

Only the host that launched a driver can watch its process (``/proc``); a stop or deploy on another host
(another Celery worker) sees only the final status, which the driver writes while its JVM still runs for a
second or two. So the launching host says so in the control area: its log pump, which reads the driver's
output to the end, records the exit when that output closes (the driver's JVM and every process it started
have exited), and a stop there that sees the process gone records it too. A deploy or stop on any host waits
for that record before it reports the driver gone, bounded, and names the host that must still confirm.

Drivers launched before the pump recorded exits (no ``exit_record`` in their driver entry) are not waited for.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from airflow_async_stream.driver.poll import POLL_S, poll_interval
from airflow_async_stream.driver.process import DriverProcess, gone_here, launched_elsewhere, this_host
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver, DriverExit
from airflow_async_stream.waits import Log, WaitLog

__all__ = [
    "EXIT",
    "Exiting",
    "await_exit_record",
    "confirm_exit_here",
    "record_exit",
    "unconfirmed",
    "wait_for_driver_exit",
]

#: The control area's record of the newest driver exit a launching host saw.
EXIT = ControlArea.DRIVER_EXIT

_log = logging.getLogger(__name__)


def record_exit(control: ControlArea, deployment_id: str, seen: str) -> None:
    """Record that ``deployment_id``'s driver processes on this host have exited, and how that was seen."""
    record = DriverExit(deployment_id=deployment_id, host=this_host(), exited_at=time.time(), seen=seen)
    control.write_json(EXIT, record.to_json())


@dataclass(frozen=True)
class Exiting:
    """A driver process not yet seen to exit: its pid, its host, and whether that host is this one."""

    pid: int | None
    host: str | None
    here: bool

    def describe(self) -> str:
        if self.here:
            return f"its process (pid {self.pid}) on this host is still exiting"
        return f"host {self.host} has not confirmed yet that its process (pid {self.pid}) exited"

    def remedy(self, job: str) -> str:
        """What confirms the exit of another host's driver: a stop on that host, which sees its processes."""
        if self.here:
            return ""
        return (
            f" (on {self.host}, `airflow-async-stream stop {job}` confirms the exit once the process is gone, "
            f"also after that host restarted; if {self.host} is gone for good, `airflow-async-stream stop {job} "
            f"--driver-gone {self.host}` says so)"
        )


def await_exit_record(
    control: ControlArea,
    deployment_id: str,
    driver: Driver,
    timeout_s: float,
    log: Log = _log,
    sleep: Callable[[float], None] = time.sleep,
    poll_s: float = POLL_S,
) -> Exiting | None:
    """Wait until the launching host has recorded the exit of ``driver`` (of ``deployment_id``); what is
    still unconfirmed after ``timeout_s``. A driver whose launch records no exit is not waited for."""
    if not driver.exit_record:
        return None
    pid, host = driver.launcher_pid, driver.host
    deadline = time.monotonic() + timeout_s
    say = WaitLog(log, f"Waiting for host {host} to confirm that the driver process (pid {pid}) exited", timeout_s)
    while control.read_exit(deployment_id) is None:
        if time.monotonic() >= deadline:
            log.warning(
                "Host %s has not confirmed the exit of the driver process (pid %s) in %.0f s", host, pid, timeout_s
            )
            return Exiting(pid, host, here=False)
        say("no exit record yet")
        sleep(poll_s)
    return None


def wait_for_driver_exit(
    control: ControlArea,
    timeout_s: float,
    log: Log = _log,
    sleep: Callable[[float], None] = time.sleep,
    deployment_id: str | None = None,
) -> Exiting | None:
    """Wait until the latest deployment's driver process has exited: one of this host in ``/proc`` (then
    recorded, for the other hosts), another host's through that host's exit record. What is still exiting
    after ``timeout_s``. Drivers on clusters, and those whose record does not identify them, are not waited for."""
    deployment = control.read_deployment()
    if deployment is None or not deployment.driver or deployment_id not in (None, deployment.deployment_id):
        return None
    driver, deployment_id = deployment.driver, deployment.deployment_id
    if launched_elsewhere(driver):
        return await_exit_record(control, deployment_id, driver, timeout_s, log, sleep, poll_interval(control))
    process = DriverProcess.of(driver)
    if process.refusal is None and process.alive:
        deadline = time.monotonic() + timeout_s
        say = WaitLog(log, f"Waiting for the driver process (pid {process.pid}) to exit", timeout_s)
        while DriverProcess.of(driver).alive:  # /proc only: the record is read once
            say("still running")
            if time.monotonic() >= deadline:
                log.warning("The driver process (pid %s) is still exiting after %.0f s", process.pid, timeout_s)
                return Exiting(process.pid, process.host, here=True)
            sleep(POLL_S)
    _confirm_here(control, deployment_id, driver)
    return None


def unconfirmed(control: ControlArea) -> Exiting | None:
    """The newest driver when another host launched it and has not recorded its exit (never waits): a deploy
    would wait for that record, so a stop says who must confirm it."""
    deployment = control.read_deployment()
    driver = deployment.driver if deployment else None
    if deployment is None or driver is None or not driver.exit_record or not launched_elsewhere(driver):
        return None
    if control.read_exit(deployment.deployment_id) is not None:
        return None
    return Exiting(driver.launcher_pid, driver.host, here=False)


def confirm_exit_here(control: ControlArea) -> None:
    """Record the exit of the newest driver when this host launched it and it is provably gone (its pump may
    not have, after a restart of this host); never waits."""
    deployment = control.read_deployment()
    if deployment is not None and deployment.driver:
        _confirm_here(control, deployment.deployment_id, deployment.driver)


def _confirm_here(control: ControlArea, deployment_id: str, driver: Driver) -> None:
    if driver.exit_record and gone_here(driver) and control.read_exit(deployment_id) is None:
        pid = driver.launcher_pid
        record_exit(control, deployment_id, f"this host's /proc: the driver process (pid {pid}) is gone")
