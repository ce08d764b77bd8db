"""A person's stop ends a real Spark driver whose control area sits on a full disk (a small tmpfs, filled up):
the stop request cannot be written, so ``stop`` ends this host's provable driver by signal, says what it could
not record, and keeps the stop where the supervisor reads it; ``status`` does not call the running driver
crashed meanwhile (nor does its liveness, once its heartbeat is stale), and no temporary file is left.
Needs root, to mount the tmpfs (the suite runs as root; it fails, never skips, without)."""

from __future__ import annotations

import contextlib
import errno
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.liveness import liveness, local_pid_alive
from airflow_async_stream.state.records import HEARTBEAT_INTERVAL_S
from airflow_async_stream.state.stopped import stopped_on_purpose
from tests.helpers import rate_noop, until

pytestmark = [pytest.mark.integration]

CLI = str(Path(sys.executable).parent / "airflow-async-stream")


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    assert os.geteuid() == 0, "a full disk is made with a tmpfs mount, which needs root (as the suite runs)"
    disk = tmp_path / "disk"
    disk.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(disk)], check=True)
    try:
        yield disk
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)


def _fill(disk: Path) -> None:
    with open(disk / "filler", "wb") as fh:
        try:
            while True:
                fh.write(b"\0" * (1 << 20))
                fh.flush()
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc
    with open(disk / "filler-small", "wb", buffering=0) as fh:  # the last pages too
        try:
            while True:
                fh.write(b"\0" * 4096)
        except OSError as exc:
            assert exc.errno == errno.ENOSPC, exc


def test_a_persons_stop_ends_a_real_driver_whose_disk_is_full(small_disk: Path) -> None:
    # One batch at start, then none for an hour: the driver writes only its heartbeat while the disk is full.
    spec = parse_spec(rate_noop("full-disk", str(small_disk / "ck"), trigger={"processing_time": "1 hour"}))
    record = deploy_job(
        spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)
    )
    control = ControlArea.for_checkpoint(spec.checkpoint)
    pid = record.driver.launcher_pid if record.driver else None
    assert pid and local_pid_alive(pid)
    try:
        _fill(small_disk)
        # Its heartbeat cannot be written now: once it has missed two, judged with that as the limit, the
        # driver still lives, by its own process.
        status = control.read_status()
        assert status is not None
        until(
            lambda: time.time() - (status.heartbeat_at or 0) > 2 * HEARTBEAT_INTERVAL_S,
            30,
            what="two heartbeats missed",
        )
        assert control.read_status() == status and local_pid_alive(pid)  # none written, and the driver runs on
        judged = liveness(status, stale_after_s=2 * HEARTBEAT_INTERVAL_S)
        assert judged.live and f"its driver process {status.pid} runs on this host" in judged.reason, judged
        shown = subprocess.run([CLI, "status", spec.checkpoint], capture_output=True, text=True, timeout=120)
        assert "crashed" not in shown.stdout and "Traceback" not in shown.stderr, shown

        done = subprocess.run(
            [CLI, "stop", spec.checkpoint, "--graceful-timeout", "10"], capture_output=True, text=True, timeout=180
        )

        assert done.returncode == 0, done
        assert done.stdout.startswith("stopped by signal (its control area cannot carry a stop: "), done
        assert "No space left on device" in done.stdout and f"pid {pid} stopped on SIG" in done.stdout, done
        until(lambda: not local_pid_alive(pid), 30, what="the driver's exit")
        stopped = stopped_on_purpose(control)  # kept beside the registry: the supervisor leaves the job down
        assert stopped is not None and stopped.deployment_id == record.deployment_id
        assert [p.name for p in Path(control.root).rglob("*") if ".tmp" in p.name] == []
        assert (small_disk / "ck" / "commits" / "0").is_file()  # the checkpoint as it was
    finally:
        if local_pid_alive(pid):
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pid, signal.SIGKILL)
