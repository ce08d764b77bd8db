"""A driver's exit, seen from every host: the launching host's log pump records it in the control area when the
driver's output closes, and a stop or deploy on another host waits for that record (bounded, naming the host).
Real processes (tests/fake_driver.py and the real log pump, no Spark); the other host is ``unshare --uts --pid
--fork --mount-proc`` with its own hostname over the same files."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.exits import EXIT, wait_for_driver_exit
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.log import start_pump
from airflow_async_stream.driver.process import identify
from airflow_async_stream.driver.stop import StopOutcome, stop_driver
from airflow_async_stream.exceptions import JobAlreadyRunningError, StopTimeoutError
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.insight.health import Verdict
from airflow_async_stream.spec import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import read_incidents
from tests.helpers import until
from tests.unit.cli_run import cli

ROOT = Path(__file__).resolve().parents[3]
OTHER_HOST = "worker-a"


def _pids_of(deployment_id: str) -> list[int]:
    """The fake driver's processes on this machine, whichever pid space (a /proc watch): ``-m tests.fake_driver``
    and ``deployment_id`` as arguments of their own, so the shell, ``unshare`` and the log pump, whose command
    lines also name them, and which end only after the pump recorded the exit, do not count."""
    found = []
    for entry in os.listdir("/proc"):
        try:
            arguments = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0") if entry.isdigit() else []
        except OSError:
            continue
        if b"tests.fake_driver" in arguments and deployment_id.encode() in arguments:
            found.append(int(entry))
    return found


def _driver_on_other_host(control: ControlArea, processes: list[Any], tmp_path: Path) -> tuple[str, Path]:
    """A fake driver launched on the other host as a launch does it: its output through the log pump, which
    records its exit. It obeys a stop, then lingers until the test creates the returned file."""
    deployment_id, release = f"d-{uuid.uuid4().hex[:6]}", tmp_path / "let-it-exit"
    driver = f"{sys.executable} -m tests.fake_driver --control-area {control.url} --deployment-id {deployment_id} --obey --linger-until {release} --record-deployment --exit-record"
    pump = f"{sys.executable} -m airflow_async_stream.driver.log {tmp_path / 'driver.log'} --max-bytes 100000 --files 2 --exit-record {control.url} --deployment {deployment_id}"
    command = [
        "unshare",
        "--uts",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        f"hostname {OTHER_HOST} && {driver} 2>&1 | {pump}",
    ]
    processes.append(subprocess.Popen(command, cwd=ROOT, start_new_session=True))
    until(
        lambda: (control.read_json(ControlArea.STATUS) or {}).get("deployment_id") == deployment_id, 30, what="a status"
    )
    until(
        lambda: (control.read_json(ControlArea.DEPLOYMENT) or {}).get("deployment_id") == deployment_id,
        30,
        what="a record",
    )
    return deployment_id, release


def test_the_log_pump_records_the_exit_when_the_output_closes(control: ControlArea, tmp_path: Path) -> None:
    log = tmp_path / "driver.log"
    pump, output = start_pump(str(log), 100_000, 2, (control.url, "d-1"))
    driver = subprocess.Popen(["cat"], stdin=subprocess.PIPE, stdout=output)
    os.close(output)
    assert driver.stdin is not None
    driver.stdin.write(b"a line of the driver\n")
    driver.stdin.flush()
    until(lambda: log.exists() and b"a line of the driver" in log.read_bytes(), 30, what="the pump to write the line")
    assert control.read_exit("d-1") is None, "an exit recorded while the driver's output was still open"
    driver.stdin.close()  # the driver exits
    assert driver.wait(timeout=10) == 0 and pump.wait(timeout=10) == 0
    record = control.read_exit("d-1")
    assert record is not None and record.host == identify(os.getpid()).host
    assert record.seen == "its output closed (the log pump read it to the end)"
    assert control.read_exit("d-2") is None  # a record names its deployment


def test_a_stop_from_another_host_returns_once_the_drivers_host_confirms_its_exit(
    control: ControlArea, processes: list[Any], tmp_path: Path
) -> None:
    deployment_id, release = _driver_on_other_host(control, processes, tmp_path)
    outcome: list[StopOutcome] = []
    stopping = threading.Thread(target=lambda: outcome.append(stop_driver(control, "test", 1, kill_after_s=60)))
    stopping.start()
    until(lambda: (control.read_json(ControlArea.STATUS) or {}).get("state") == "stopped", 30, what="the final status")
    assert _pids_of(deployment_id), "the driver process exited before the test let it"
    stopping.join(timeout=1.0)  # its query has stopped; its process has not exited: the stop must still wait
    assert stopping.is_alive() and not outcome, "a stop returned at the final status, before the process exit"
    release.touch()
    stopping.join(timeout=30)
    assert outcome and outcome[0].status.state == "stopped" and outcome[0].exiting is None
    assert _pids_of(deployment_id) == [], "the stop returned while the driver process still ran"
    assert control.read_exit(deployment_id).host == OTHER_HOST  # type: ignore[union-attr]


def test_an_exit_not_confirmed_in_time_is_said_naming_the_host_and_a_deploy_refuses(
    control: ControlArea, processes: list[Any], tmp_path: Path
) -> None:
    deployment_id, release = _driver_on_other_host(control, processes, tmp_path)
    outcome = stop_driver(control, "test", 1, kill_after_s=2)
    assert outcome.status.state == "stopped" and outcome.exiting is not None and not outcome.exiting.here
    said = f"host {OTHER_HOST} has not confirmed yet that its process (pid {outcome.exiting.pid}) exited"
    assert outcome.exiting.describe() == said
    with pytest.raises(StopTimeoutError, match=re.escape(f"stopped its query, but {said} 2 s after the stop request")):
        outcome.raise_unless_stopped("job", 2)

    spec = parse_spec(
        {
            "name": "job",
            "checkpoint": control.url.removesuffix(".async-stream"),
            "source": {"format": "rate"},
            "sink": {"format": "noop"},
        }
    )
    settings = DeploySettings(
        launcher=LocalLauncher(base=["/bin/false"], extra={"spark_version": "4.2.0"}), stop_kill_after_s=0.5
    )
    with pytest.raises(JobAlreadyRunningError) as refused:
        deploy_job(spec, Holder.this_process("test"), settings)
    assert f"but {said} 0 s later; not deploying beside it (on {OTHER_HOST}, `airflow-async-stream stop job`" in str(
        refused.value
    )
    assert (control.read_json(ControlArea.DEPLOYMENT) or {}).get("deployment_id") == deployment_id, "it launched"

    release.touch()  # the driver exits; its pump says so; the same wait now passes
    until(lambda: control.read_exit(deployment_id) is not None, 30, what="the exit record")
    assert wait_for_driver_exit(control, 0.5) is None


def test_the_launching_hosts_stop_confirms_an_exit_its_pump_never_recorded(
    control: ControlArea, processes: list[Any]
) -> None:
    """The pump died with its host (a restart) or was killed: the launching host's stop sees the process gone
    in /proc and records the exit, so the other hosts' deploys go on."""
    driver = subprocess.Popen([sys.executable, "-c", "pass"])
    driver.wait()
    entry = {
        "kind": "local-process",
        **identify(os.getpid()).to_json(),
        "launcher_pid": driver.pid,
        "exit_record": True,
    }
    entry["launcher_started"] = 1  # the pid's start, as recorded: whatever now has that pid is not it
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d-gone", "driver": entry})
    control.write_json(ControlArea.STATUS, {"deployment_id": "d-gone", "state": "stopped", "heartbeat_at": 1.0})
    assert control.read_json(EXIT) is None
    outcome = stop_driver(control, "test", 1, kill_after_s=5)
    assert not outcome.was_live and outcome.exiting is None
    record = control.read_exit("d-gone")
    assert record is not None and record.seen == f"this host's /proc: the driver process (pid {driver.pid}) is gone"


def test_a_host_gone_for_good_is_said_by_hand_and_only_of_a_driver_that_no_longer_reports(
    control: ControlArea,
) -> None:
    """No host can confirm the exit of a driver whose host is gone for good: ``stop --driver-gone HOST`` says so,
    naming that host (a typo, or a driver still reporting, is refused)."""
    driver = {
        "kind": "local-process",
        "host": OTHER_HOST,
        "launcher_pid": 4242,
        "launcher_started": 1,
        "pid_namespace": "pid:[1]",
        "exit_record": True,
    }
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d-a", "driver": driver})
    control.write_json(
        ControlArea.STATUS,
        {"deployment_id": "d-a", "state": "running", "heartbeat_at": time.time(), "host": OTHER_HOST, "pid": 4242},
    )
    stop = ("stop", control.url, "--driver-gone")
    live = cli(*stop, OTHER_HOST)
    assert live.returncode == 1 and "its driver still reports (" in live.stderr, live
    control.write_json(ControlArea.STATUS, {"deployment_id": "d-a", "state": "stopped", "heartbeat_at": 1.0})
    typo = cli(*stop, "worker-z")
    assert typo.returncode == 2 and f"was launched on {OTHER_HOST}, not worker-z" in typo.stderr, typo
    assert wait_for_driver_exit(control, 0.2) is not None and control.read_exit("d-a") is None
    said = cli(*stop, OTHER_HOST)
    assert said.returncode == 0, said
    assert (
        said.stdout
        == f"recorded: the driver of deployment d-a on {OTHER_HOST} has exited; a deploy from any host goes on\n"
    )
    assert control.read_exit("d-a").seen.endswith(f"host {OTHER_HOST} is gone, its driver with it")  # type: ignore[union-attr]
    assert wait_for_driver_exit(control, 0.2) is None


def test_a_driver_killed_on_another_host_is_crashed_here_as_soon_as_its_exit_is_recorded(
    control: ControlArea, processes: list[Any], tmp_path: Path
) -> None:
    """Killed hard (no final status), its heartbeat still fresh: the exit record its host's pump writes makes
    it crashed on this host at once, recorded failed once, with one incident."""
    deployment_id, _ = _driver_on_other_host(control, processes, tmp_path)
    assert check_up(control, None).health.verdict == Verdict.HEALTHY
    [pid] = _pids_of(deployment_id)
    os.kill(pid, signal.SIGKILL)
    until(lambda: control.read_exit(deployment_id) is not None, 10, what="the exit record")
    looked = check_up(control, None)
    exited_at = control.read_exit(deployment_id).exited_at  # type: ignore[union-attr]
    assert looked.health.verdict == Verdict.CRASHED and time.time() - exited_at < 1.0, looked.health
    assert f"host {OTHER_HOST} recorded" in looked.health.reason
    assert control.read_status().state == "failed"  # type: ignore[union-attr]
    for _ in range(3):
        check_up(control, None)
    assert [(i.kind, i.deployment_id) for i in read_incidents(control)] == [("crash", deployment_id)]
    assert stop_driver(control, "test", 1, kill_after_s=2).status.state == "failed"  # type: ignore[union-attr]
