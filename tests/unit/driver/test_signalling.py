"""A stop signals a process only when this host launched it and it still is that driver; and a stop
that says ``stopped`` means the driver process has exited. Real processes (tests/fake_driver.py, no
Spark); a second host is a process under ``unshare --uts --pid --fork --mount-proc`` with its own name."""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.process import identify
from airflow_async_stream.driver.start import wait_until_running
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import DriverFailedError, HoldRevokedError, StopTimeoutError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, take
from tests.fake_driver import started
from tests.unit.cli_run import cli

ROOT = Path(__file__).resolve().parents[3]
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
OTHER_HOST = "other-host"


def _on_other_host(*command: str) -> list[str]:
    """A command run under its own hostname and pid space, over the same files (a second host)."""
    return [
        "unshare",
        "--uts",
        "--pid",
        "--fork",
        "--mount-proc",
        "sh",
        "-c",
        f'hostname {OTHER_HOST} && exec "$0" "$@"',
        *command,
    ]


def _fake_driver(
    control: ControlArea, processes: list[subprocess.Popen[bytes]], *args: str, command: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """Start a fake live driver as its own process group and wait for its first status record."""
    return started(control, f"d-{uuid.uuid4().hex[:6]}", *args, processes=processes, before=command)


def _record(control: ControlArea, driver: dict[str, Any]) -> None:
    deployment_id = control.read_json(ControlArea.STATUS)["deployment_id"]  # type: ignore[index]
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": deployment_id, "driver": driver})


def _stop(control: ControlArea, kill_after_s: float = 0.3) -> Any:
    return stop_driver(control, "test", graceful_timeout_s=0.1, kill_after_s=kill_after_s)


def test_a_driver_recorded_on_another_host_is_never_signalled(control: ControlArea, processes: list[Any]) -> None:
    process = _fake_driver(control, processes)
    _record(control, {"kind": "local-process", **identify(process.pid).to_json(), "host": OTHER_HOST})

    with pytest.raises(StopTimeoutError, match=f"launched on host {OTHER_HOST}.*stop it from {OTHER_HOST}"):
        _stop(control)
    assert process.poll() is None, "a process of this host was signalled for a driver of another host"
    assert control.read_json(ControlArea.STATUS)["state"] == "running"  # type: ignore[index]


def test_a_reused_pid_is_left_alone(control: ControlArea, processes: list[Any]) -> None:
    process = _fake_driver(control, processes)
    driver = identify(process.pid)
    _record(control, {**driver.to_json(), "launcher_started": (driver.launcher_started or 0) - 1})

    with pytest.raises(StopTimeoutError, match=f"pid {process.pid} on this host is now another process"):
        _stop(control)
    assert process.poll() is None


def test_a_record_of_the_current_release_without_identity_is_never_signalled(
    control: ControlArea, processes: list[Any]
) -> None:
    process = _fake_driver(control, processes)
    _record(control, {"kind": "local-process", "host": identify(process.pid).host, "launcher_pid": process.pid})

    with pytest.raises(
        StopTimeoutError, match=rf"written by hand, or on a host without /proc.*ps -o pid,lstart,args -p {process.pid}"
    ):
        _stop(control)
    assert process.poll() is None


def test_a_provable_driver_of_this_host_that_does_not_stop_is_killed(
    control: ControlArea, processes: list[Any]
) -> None:
    process = _fake_driver(control, processes)
    _record(control, {"kind": "local-process", **identify(process.pid).to_json()})

    outcome = _stop(control)

    assert process.wait(timeout=5) == -9
    assert outcome.status.state == "failed" and outcome.status.error.startswith("killed")


def test_stopped_means_the_driver_process_has_exited(control: ControlArea, processes: list[Any]) -> None:
    process = _fake_driver(control, processes, "--obey", "--linger", "1.5")
    _record(control, {"kind": "local-process", **identify(process.pid).to_json()})

    outcome = _stop(control, kill_after_s=30)

    assert outcome.status.state == "stopped"
    assert process.poll() is not None, "stop returned while the driver process was still running"
    assert outcome.exiting_pid is None


def test_a_driver_still_exiting_at_the_time_limit_is_named(control: ControlArea, processes: list[Any]) -> None:
    process = _fake_driver(control, processes, "--obey", "--linger", "60")
    _record(control, {"kind": "local-process", **identify(process.pid).to_json()})

    outcome = _stop(control, kill_after_s=1)

    assert outcome.status.state == "stopped"
    assert outcome.exiting_pid == process.pid
    assert process.poll() is None  # never killed: it stopped its query and is on its way out


def test_a_driver_recorded_before_this_host_restarted_is_left_alone(control: ControlArea, processes: list[Any]) -> None:
    """The same host name, pid and start ticks after a reboot name another process: the boot id tells."""
    process = _fake_driver(control, processes)
    _record(control, {"kind": "local-process", **identify(process.pid).to_json(), "boot_id": "an-earlier-boot"})

    with pytest.raises(StopTimeoutError, match=f"this host has restarted since the driver \\(pid {process.pid}\\)"):
        _stop(control)
    assert process.poll() is None


def test_a_driver_of_another_pid_namespace_on_this_host_is_left_alone(
    control: ControlArea, processes: list[Any]
) -> None:
    """Two containers of one host name (same hostname, own pid spaces): the driver recorded its own pid
    namespace, so the pid it names is never taken for a process of this one."""
    command = ["unshare", "--pid", "--fork", "--mount-proc"]
    process = _fake_driver(control, processes, "--record-deployment", command=command)
    driver = control.read_json(ControlArea.DEPLOYMENT)["driver"]  # type: ignore[index]
    assert (
        driver["host"] == identify(os.getpid()).host and driver["pid_namespace"] != identify(os.getpid()).pid_namespace
    )

    with pytest.raises(StopTimeoutError, match=f"launched in another pid namespace on {driver['host']}"):
        _stop(control)
    assert process.poll() is None
    assert control.read_json(ControlArea.STATUS)["state"] == "running"  # type: ignore[index]


def test_a_stop_from_another_host_signals_nothing_here(control: ControlArea, processes: list[Any]) -> None:
    process = _fake_driver(control, processes, "--record-deployment")

    out = subprocess.run(
        _on_other_host(CLI, "stop", control.url, "--graceful-timeout", "0.2", "--kill-after", "0.5"),
        capture_output=True,
        text=True,
        check=False,
    )

    assert out.returncode == 2, out
    assert f"launched on host {identify(process.pid).host}" in out.stderr
    assert process.poll() is None
    assert control.read_json(ControlArea.STATUS)["state"] == "running"  # type: ignore[index]


def test_a_driver_launched_on_another_host_is_not_signalled_from_here(
    control: ControlArea, processes: list[Any]
) -> None:
    process = _fake_driver(control, processes, "--record-deployment", command=_on_other_host())

    with pytest.raises(StopTimeoutError, match=f"launched on host {OTHER_HOST}"):
        _stop(control)
    assert process.poll() is None
    deployment = control.read_json(ControlArea.DEPLOYMENT)
    assert deployment["driver"]["host"] == OTHER_HOST  # type: ignore[index]


def test_a_stop_while_another_run_holds_the_job_is_refused_unless_forced(
    control: ControlArea, processes: list[Any]
) -> None:
    process = _fake_driver(control, processes, "--obey", "--record-deployment")
    migration = Holder("DAG run disable_async_for_clicks/manual-1", "safe-disable clicks")
    take(control, migration, 600)

    refused = cli("stop", control.url)

    assert refused.returncode == 1
    assert "not stopped" in refused.stderr and "held by DAG run disable_async_for_clicks/manual-1" in refused.stderr
    assert "--force" in refused.stderr
    assert process.poll() is None and control.read_json(ControlArea.STATUS)["state"] == "running"  # type: ignore[index]

    forced = cli("stop", control.url, "--force")

    assert forced.returncode == 0, forced
    assert "ended the hold of DAG run disable_async_for_clicks/manual-1" in forced.stdout
    assert "stopped: state stopped" in forced.stdout
    assert process.poll() is not None
    with pytest.raises(HoldRevokedError):
        take(control, migration, 600)  # the migration's next step
    assert control.read_json(ControlArea.HOLD) is None  # the stop released its own hold


def test_the_startup_wait_fails_at_once_when_the_launcher_pid_is_another_process_now(control: ControlArea) -> None:
    reused = identify(os.getpid()).but(launcher_started=1)  # this pid, another start

    started = time.monotonic()
    with pytest.raises(DriverFailedError, match=f"spark-submit \\(pid {os.getpid()}\\) exited before the query ran"):
        wait_until_running(control, "d-never", reused, timeout_s=30)
    assert time.monotonic() - started < 5


# -- a stop and a driver that is still launching (no status names it yet) ----------------------------------


def _launching(
    control: ControlArea, driver: dict[str, Any] | None, deployed_s_ago: float = 0.0, deployment_id: str = ""
) -> str:
    """A deployment record newer than the status, as a deploy writes it right before spark-submit."""
    deployment_id = deployment_id or f"d-{uuid.uuid4().hex[:6]}"
    record = {"deployment_id": deployment_id, "deployed_at": time.time() - deployed_s_ago, "state": "submitted"}
    control.write_json(ControlArea.DEPLOYMENT, {**record, "driver": driver})
    return deployment_id


def test_a_stop_names_a_launching_driver_and_leaves_its_request_when_it_never_reports(control: ControlArea) -> None:
    deployment_id = _launching(control, None)

    with pytest.raises(StopTimeoutError, match=f"deployment {deployment_id} was launching.*the request stands"):
        _stop(control, kill_after_s=0.3)
    assert control.stop_request_for(deployment_id) is not None  # read by that driver before its query starts


def test_a_launching_driver_that_reports_and_stops_at_once_is_stopped_not_was_not_running(
    control: ControlArea, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The driver reads the stop request at its start: its first report (live) and its final one (stopped) can
    land between two looks of the stop; it was launching when asked, so the stop says it stopped it."""
    from airflow_async_stream.driver import stop as stop_module
    from airflow_async_stream.state.records import Status, now

    deployment_id = _launching(control, None)
    judge = stop_module.liveness

    def the_driver_ends_right_after(status: Any, *args: Any) -> Any:
        judged = judge(status, *args)
        if judged.live and status.deployment_id == deployment_id:  # injected: its stop lands before the next look
            control.write_status(status.but(state="stopped", stop_reason="stop requested", finished_at=now()))
        return judged

    def the_driver_reports_once_asked(*args: Any) -> None:
        request(*args)  # injected: the driver's first report lands right after the stop request naming it
        control.write_status(Status(deployment_id=deployment_id, state="starting", heartbeat_at=now()))

    request = control.request_stop
    monkeypatch.setattr(control, "request_stop", the_driver_reports_once_asked)
    monkeypatch.setattr(stop_module, "liveness", the_driver_ends_right_after)

    outcome = _stop(control)

    assert outcome.was_live and outcome.status.state == "stopped", outcome
    assert outcome.status.deployment_id == deployment_id


def test_a_launch_whose_spark_submit_exited_or_that_is_long_past_is_not_launching(control: ControlArea) -> None:
    exited = subprocess.Popen([sys.executable, "-c", "pass"])
    driver = {"kind": "local-process", **identify(exited.pid).to_json()}
    exited.wait()
    _launching(control, driver)
    assert _stop(control).was_live is False
    _launching(control, None, deployed_s_ago=3600)  # its deploy died before it launched anything
    assert _stop(control).was_live is False
    assert control.read_json(ControlArea.STOP_REQUEST) is None


def test_a_launch_of_this_host_that_never_reports_is_killed_at_the_stops_time_limit(
    control: ControlArea, processes: list[Any]
) -> None:
    deployment_id = f"d-{uuid.uuid4().hex[:6]}"
    stuck = "import time; time.sleep(600)"  # a spark-submit stuck before the driver, named as spark-submit is
    argv = [sys.executable, "-c", stuck, "--control-area", control.url, "--deployment-id", deployment_id]
    hung = subprocess.Popen(argv, start_new_session=True)
    processes.append(hung)  # type: ignore[arg-type]
    _launching(control, {"kind": "local-process", **identify(hung.pid).to_json()}, deployment_id=deployment_id)

    outcome = _stop(control, kill_after_s=0.3)

    assert outcome.was_live and hung.wait(timeout=5) == -9


def test_a_stop_whose_connection_cannot_be_read_still_kills_this_hosts_driver(
    control: ControlArea, processes: list[Any]
) -> None:
    """The stop operator hands stop_job a launcher to build from its connection only for a driver on a
    cluster: a secrets backend that is down does not keep a stop of this host's driver from winning."""
    from airflow_async_stream.driver.deploy import DeploySettings, stop_job
    from airflow_async_stream.exceptions import ConnectionLookupError

    def unreadable() -> Any:
        raise ConnectionLookupError("Airflow connection 'spark_default' could not be read")

    process = _fake_driver(control, processes)
    _record(control, {"kind": "local-process", **identify(process.pid).to_json()})
    settings = DeploySettings(launcher=unreadable, stop_graceful_timeout_s=0.1, stop_kill_after_s=0.3)

    outcome = stop_job(control, Holder("process 1 on h", "test stop"), settings, "test")

    assert process.wait(timeout=5) == -9
    assert outcome.status.state == "failed" and outcome.status.error.startswith("killed")
