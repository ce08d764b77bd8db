"""Waiting for a driver to run, through its control area, and the end of its log for the errors that say why
it did not (stop.py waits for it to stop); before it starts, the refusal of a synchronous start Spark would
die on. Airflow-free, so operators, the CLI and tests share one
implementation; every wait logs its progress.
"""

from __future__ import annotations

import logging
import os
import posixpath
import time
from collections.abc import Callable
from functools import partial

from airflow_async_stream.decision.needs import CHECKPOINT, Decision, Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.driver.launcher import Launcher
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.log import tail_lines
from airflow_async_stream.driver.poll import poll_interval
from airflow_async_stream.exceptions import (
    ControlAreaError,
    DeployError,
    DriverFailedError,
    DriverStartTimeoutError,
    UnsafeSyncRestartError,
)
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import LOG_TAIL_BYTES, ControlArea
from airflow_async_stream.state.records import FINAL_STATES, Driver, State, Status
from airflow_async_stream.state.registry import registry_dir
from airflow_async_stream.state.storage import is_local_url, open_local, open_url
from airflow_async_stream.waits import REPORT_EVERY_S, Log, WaitLog

__all__ = [
    "REPORT_EVERY_S",
    "log_tail",
    "refuse_unsafe_sync_start",
    "status_of",
    "wait_until_running",
]

_log = logging.getLogger(__name__)


def log_tail(control: ControlArea, lines: int = 30, files: int = 2) -> str:
    """The end of the driver log, read on through up to ``files`` of its rotated files (empty when there is
    none).

    The log is in the control area, or, for a driver of this host whose control area is remote, on
    this host where the deployment record says; a log just rotated is read on into its previous file.
    """
    deployment = control.read_deployment()
    driver = deployment.driver if deployment else None
    local_log = driver.log if driver and driver.log_on_host else None
    try:
        if local_log:
            return tail_lines(_read_local, local_log, lines, files)
        return tail_lines(partial(control.read_bytes, start=-LOG_TAIL_BYTES), ControlArea.DRIVER_LOG, lines, files)
    except (ControlAreaError, OSError) as exc:  # a report of a failure never fails on the log
        return f"(the driver log cannot be read: {exc})"


def _read_local(path: str) -> bytes:
    """A driver log of this host: only in this host's log folder (registry.py), never through a symlink; a
    deployment record naming any other file (written by hand) names no log."""
    if os.path.dirname(path) != str(registry_dir().parent / "logs"):
        raise FileNotFoundError(path)
    with open_local(path, "rb") as fh:
        return fh.read()


def status_of(control: ControlArea, deployment_id: str) -> Status | None:
    status = control.read_status()
    if status and status.deployment_id == deployment_id:
        return status
    return None


def wait_until_running(
    control: ControlArea,
    deployment_id: str,
    driver: Driver | None,
    timeout_s: float,
    log: Log = _log,
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
    say = WaitLog(log, "Waiting for the first micro-batch", timeout_s, started=start)
    while True:
        status = status_of(control, deployment_id)
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
            status = status_of(control, deployment_id)
            if status and status.state == State.FAILED:
                raise DriverFailedError(f"the driver failed: {status.error}")
            raise DriverFailedError(f"{ended} before the query ran; end of its log:\n{log_tail(control)}")
        elapsed = time.monotonic() - start
        if elapsed > timeout_s:
            raise DriverStartTimeoutError(
                f"the query did not report progress within {timeout_s:.0f} s (state: {state}); "
                f"end of the driver log:\n{log_tail(control)}"
            )
        say(f"state {state}")
        sleep(poll_interval(control))


def refuse_nested(checkpoint: str) -> None:
    """A checkpoint inside another job's Spark checkpoint (a folder with ``metadata`` and ``offsets/``) would
    mix two jobs' files: refused before its control area is made there, naming that folder."""
    fs, path = open_url(checkpoint)
    parent = posixpath.dirname(path.rstrip("/"))
    while parent and parent != "/":
        if fs.exists(f"{parent}/metadata") and fs.exists(f"{parent}/offsets"):
            where = parent if is_local_url(checkpoint) else fs.unstrip_protocol(parent)
            raise DeployError(
                f"checkpoint {checkpoint} is inside {where}, the Spark checkpoint of another job: give "
                "each job a folder of its own"
            )
        parent = posixpath.dirname(parent)


def refuse_unsafe_sync_start(spec: JobSpec, allow: bool, log: Log = _log, decision: Decision | None = None) -> None:
    """A synchronous deploy the decision sends through the safe-disable migration (over a checkpoint with async
    mode's gaps it dies at start with ``batch N doesn't exist``; over a live async driver's checkpoint it cannot
    be judged) is refused before anything is stopped or submitted, unless ``allow``. ``decision``: the one the
    caller made for ``spec`` under the same hold (the supervisor's recovery), not made again."""
    if spec.async_progress.enabled:
        return
    if decision is None:
        decision = decide(observe(ControlArea.for_checkpoint(spec.checkpoint), spec.checkpoint), spec.to_mapping())
    if decision.need is not Need.SAFE_DISABLE:
        return
    why = "; ".join(reason for name, reason in decision.reasons if name == CHECKPOINT) or (
        "a driver with async progress tracking on runs the job: its checkpoint cannot be judged while it writes it"
    )
    if allow:
        log.warning("%s: deploying synchronously as asked (allow_unsafe_sync_restart), though %s", spec.name, why)
        return
    raise UnsafeSyncRestartError(
        f"{spec.name}: a synchronous deploy is refused: {why}. The cure is the safe-disable "
        "migration (safe_disable_async_progress in a DAG, or a rollout with this synchronous spec): it restarts "
        "the job with async on at interval 0 until two batches are committed, then synchronously. "
        f"`airflow-async-stream doctor {spec.checkpoint}` explains; allow_unsafe_sync_restart=True deploys anyway"
    )
