"""Which process a deployment launched on this host, whether it is still that process, and killing it.

A driver launched on an Airflow host is recorded with the host's name, the kernel's boot id, the pid
namespace and spark-submit's pid with its start time (in clock ticks after boot, from ``/proc``). Those
fields say only where to look: anyone who can write the control area can copy them from ``/proc``. A
process is signalled only when they all match here and the process itself proves it is the driver: its own
command line names the deployment and the control area being stopped, and it leads its own process group.
Anything else (another host, a reboot, another pid space, a reused pid, a record naming some other
process) is left alone, and why is said.
"""

from __future__ import annotations

import os
import posixpath
import signal
import socket
import time
from dataclasses import dataclass

from airflow_async_stream.exceptions import NotSignalledError
from airflow_async_stream.state.liveness import command_line, flag, local_pid_alive
from airflow_async_stream.state.records import Driver

__all__ = [
    "DriverProcess",
    "Target",
    "identify",
    "kill",
    "launch_ended",
    "gone_here",
    "launched_elsewhere",
    "launcher_running_here",
    "this_host",
]

_BOOT_ID = "/proc/sys/kernel/random/boot_id"
#: How long a killed driver process may take to vanish before the stop reports.
KILLED_EXIT_S = 10.0
#: How long a driver's log pump may take to write what the driver printed last (it ends at end of output).
LOG_PUMP_DRAIN_S = 3.0


def this_host() -> str:
    return socket.gethostname()


def _boot_id() -> str | None:
    try:
        with open(_BOOT_ID, encoding="ascii") as fh:
            return fh.read().strip()
    except OSError:  # no /proc (not Linux): such a driver is never signalled
        return None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """Fields 3 onwards of ``/proc/PID/stat`` (the state first); None when there is no such process."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            return fh.read().rsplit(")", 1)[-1].split()
    except OSError:
        return None


def _start_ticks(pid: int) -> int | None:
    """The process's start time in clock ticks after boot; None when no such process (or a zombie)."""
    fields = _stat(pid)
    if fields is None or fields[0] == "Z":  # a zombie: exited, waiting to be reaped: gone for every purpose here
        return None
    return int(fields[19])  # field 22 of stat


def process_group(pid: int) -> int | None:
    fields = _stat(pid)
    return int(fields[2]) if fields else None  # field 5 of stat


def plain_url(url: str) -> str:
    """A control area's URL as one spelling: a local path (``file://`` or not) normalised, trailing slashes off."""
    url = url.rstrip("/").removeprefix("file://")
    return url if "://" in url else posixpath.normpath(url)


@dataclass(frozen=True)
class Target:
    """Whom a kill is for: the control area being stopped and its deployment. The driver's own command line
    must name both (the runtime's ``--control-area`` and ``--deployment-id``), whatever a record says."""

    control_url: str
    deployment_id: str

    def unproven(self, pid: int) -> str | None:
        """Why process ``pid`` of this host is not provably this target's driver; None when it is."""
        argv = command_line(pid)
        if argv is None:
            return f"the command line of pid {pid} cannot be read"
        named = flag(argv, "--deployment-id"), flag(argv, "--control-area")
        if named[0] != self.deployment_id or named[1] is None or plain_url(named[1]) != plain_url(self.control_url):
            return (
                f"pid {pid} is not provably the driver: its command line does not name deployment "
                f"{self.deployment_id} of {self.control_url} (the deployment record may have been written by hand)"
            )
        if process_group(pid) != pid:
            return f"pid {pid} is not provably the driver: it does not lead its own process group"
        return None


def launched_elsewhere(driver: Driver) -> bool:
    """A driver process launched from another host (or another pid space of this host's name), whose
    processes this host cannot see."""
    if not driver.on_a_host or not driver.launcher_pid:
        return False
    namespace = driver.pid_namespace
    return driver.host != this_host() or (namespace is not None and namespace != _pid_namespace())


def identify(pid: int) -> Driver:
    """A driver process of this host, with what identifies it, for its deployment's record."""
    return Driver(
        host=this_host(),
        launcher_pid=pid,
        launcher_started=_start_ticks(pid),
        boot_id=_boot_id(),
        pid_namespace=_pid_namespace(),
    )


@dataclass(frozen=True)
class DriverProcess:
    """The process a driver record names, judged from this host."""

    pid: int | None
    host: str | None
    #: None when that process provably runs here; else why it may not be signalled from here.
    refusal: str | None
    #: True while the process runs here (only known for a provable process of this host).
    alive: bool

    @classmethod
    def of(cls, driver: Driver | None) -> DriverProcess:
        driver = driver or Driver()
        pid, host = driver.launcher_pid or None, driver.host
        if not driver.on_a_host or pid is None:
            return cls(pid, host, "its driver is not a process launched from an Airflow host", False)
        if host != this_host():
            return cls(
                pid,
                host,
                f"its driver was launched on host {host}, not on this host ({this_host()}): stop it from {host}",
                False,
            )
        if driver.launcher_started is None:
            return cls(
                pid,
                host,
                "its deployment record does not identify the driver process (written by hand, or on a host "
                "without /proc), so it is never signalled; see "
                f"`ps -o pid,lstart,args -p {pid}` and kill it yourself if it is that driver",
                False,
            )
        if driver.boot_id != _boot_id():
            return cls(pid, host, f"this host has restarted since the driver (pid {pid}) was launched", False)
        if driver.pid_namespace != _pid_namespace():
            return cls(pid, host, f"the driver (pid {pid}) was launched in another pid namespace on {host}", False)
        started = _start_ticks(pid)
        if started is None:
            return cls(pid, host, None, False)
        if started != driver.launcher_started:
            return cls(pid, host, f"pid {pid} on this host is now another process, not the driver", False)
        return cls(pid, host, None, True)


def gone_here(driver: Driver) -> bool:
    """A driver process this host launched that has provably exited: this host has restarted since, or its
    pid is gone (or now another process's)."""
    if not driver.on_a_host or launched_elsewhere(driver) or driver.launcher_started is None:
        return False
    if driver.boot_id != _boot_id():
        return True
    started = _start_ticks(driver.launcher_pid) if driver.launcher_pid else None
    return started is None or started != driver.launcher_started


def launcher_running_here(driver: Driver | None) -> bool | None:
    """Whether the spark-submit this host launched for ``driver`` still runs; None when not launched here.

    Only for reading: a record without the identity fields is judged by its pid alone (never signalled).
    """
    if driver is None or not driver.on_a_host or driver.host != this_host() or not driver.launcher_pid:
        return None
    if driver.launcher_started is None:
        return _start_ticks(driver.launcher_pid) is not None
    return DriverProcess.of(driver).alive


def kill(driver: Driver, target: Target) -> str:
    """SIGKILL the process group of a driver this host provably launched for ``target``, and give it a moment
    to exit; NotSignalledError saying why when the process does not prove it is that driver."""
    process = DriverProcess.of(driver)
    if process.refusal is not None or process.pid is None:
        raise NotSignalledError(process.refusal or "its deployment record names no process")
    if not process.alive:
        return f"the driver process (pid {process.pid}) exited"
    unproven = target.unproven(process.pid)
    if unproven is not None:
        raise NotSignalledError(unproven)
    try:
        os.killpg(process.pid, signal.SIGKILL)  # it was launched as its own process group
    except ProcessLookupError:
        pass
    deadline = time.monotonic() + KILLED_EXIT_S
    while DriverProcess.of(driver).alive and time.monotonic() < deadline:
        time.sleep(0.1)
    return "killed"


def launch_ended(driver: Driver) -> str | None:
    """Why the spark-submit this host launched for ``driver`` is over, once its log pump wrote the last
    lines; None while it runs, or when it was not launched here."""
    if launcher_running_here(driver) is not False:
        return None
    pump = driver.log_pump_pid
    if pump and driver.host == this_host():
        deadline = time.monotonic() + LOG_PUMP_DRAIN_S
        while local_pid_alive(pump) and time.monotonic() < deadline:
            time.sleep(0.05)
    return f"spark-submit (pid {driver.launcher_pid}) exited"
