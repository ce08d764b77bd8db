"""Forged control areas never lead to a signal: whoever can write a job's folder on the checkpoint storage can
copy any process's ``/proc`` fields into a deployment record, but only a process whose own command line names
the deployment and the control area being stopped is killed. Real processes, no Spark."""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.process import Target, identify, kill
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import NotSignalledError, StopTimeoutError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import CLOCK_SKEW_S, liveness
from airflow_async_stream.state.records import Status, now
from tests.fake_driver import started
from tests.unit.cli_run import cli

ROOT = Path(__file__).resolve().parents[3]
YEAR_2286 = 9_999_999_999.0


def _sleeper(processes: list[Any], *argv: str, own_group: bool = True) -> subprocess.Popen[bytes]:
    """An unrelated process of this host (a scheduler, a triggerer stand-in)."""
    process = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", *argv], start_new_session=own_group
    )
    processes.append(process)
    return process


def _forge(control: ControlArea, pid: int, deployment_id: str = "d-forged", heartbeat_at: float | None = None) -> None:
    """A deployment record naming ``pid`` with its copied identity, and a live-looking status."""
    control.write_json(
        ControlArea.DEPLOYMENT,
        {
            "deployment_id": deployment_id,
            "state": "submitted",
            "confirmed_at": now(),
            "driver": {"kind": "local-process", **identify(pid).to_json()},
        },
    )
    status = {"deployment_id": deployment_id, "state": "running", "heartbeat_at": heartbeat_at or now()}
    control.write_json(ControlArea.STATUS, status)


def _alive(process: subprocess.Popen[bytes]) -> bool:
    return process.poll() is None


def test_the_reported_attack_a_future_heartbeat_and_copied_fields_signal_nothing(
    control: ControlArea, processes: list[Any]
) -> None:
    sleeper = _sleeper(processes)
    _forge(control, sleeper.pid, heartbeat_at=YEAR_2286)

    done = cli("stop", control.url.removesuffix(".async-stream"), "--kill-after", "2", "--graceful-timeout", "1")

    assert _alive(sleeper), done
    # nothing signalled; the look recorded the forged deployment failed, and `stop` of a failed job exits 1
    assert (done.returncode, done.stdout.strip()) == (1, "was not running: state failed"), done
    assert "in the future" in str(control.read_status().error)  # type: ignore[union-attr]  # a look settled it


def test_an_unrelated_process_with_copied_fields_is_reported_never_killed(
    control: ControlArea, processes: list[Any]
) -> None:
    sleeper = _sleeper(processes)
    _forge(control, sleeper.pid)

    with pytest.raises(StopTimeoutError, match=rf"pid {sleeper.pid} is not provably the driver: its command line"):
        stop_driver(control, "test", graceful_timeout_s=0.1, kill_after_s=0.3)
    assert _alive(sleeper)


def test_another_jobs_real_driver_named_by_a_forged_record_is_not_killed(
    control: ControlArea, processes: list[Any], tmp_path: Path
) -> None:
    other = ControlArea(str(tmp_path / "other.async-stream"))
    driver = _sleeper(processes, "--control-area", other.url, "--deployment-id", "d-other")
    _forge(control, driver.pid, deployment_id="d-other")  # its id, but this control area

    with pytest.raises(NotSignalledError, match="not provably the driver"):
        kill(identify(driver.pid), Target(control.url, "d-other"))
    with pytest.raises(NotSignalledError, match="does not name deployment d-forged"):
        kill(identify(driver.pid), Target(other.url, "d-forged"))
    assert _alive(driver)


def test_a_process_that_does_not_lead_its_process_group_is_not_killed(
    control: ControlArea, processes: list[Any]
) -> None:
    """Its group is another's (this test's own, here): a group kill would reach them."""
    named = _sleeper([], "--control-area", control.url, "--deployment-id", "d-1", own_group=False)
    try:
        with pytest.raises(NotSignalledError, match="does not lead its own process group"):
            kill(identify(named.pid), Target(control.url, "d-1"))
        assert _alive(named)
    finally:
        named.kill()
        named.wait()


def test_the_driver_named_by_its_own_command_line_is_killed(control: ControlArea, processes: list[Any]) -> None:
    spelled = "file://" + control.url.replace("/ck.async-stream", "//ck.async-stream/")  # the same area, spelled apart
    driver = _sleeper(processes, "--control-area", spelled, "--deployment-id", f"d-{uuid.uuid4().hex[:4]}")
    deployment_id = driver.args[-1]  # type: ignore[index]

    assert kill(identify(driver.pid), Target(control.url, deployment_id)) == "killed"
    assert driver.wait(timeout=5) == -9


def test_a_heartbeat_in_the_future_beyond_the_clock_skew_is_not_live() -> None:
    def judged(ahead_s: float) -> Any:
        return liveness(Status(deployment_id="d", state="running", heartbeat_at=time.time() + ahead_s))

    assert judged(CLOCK_SKEW_S / 2).live
    assert not judged(CLOCK_SKEW_S + 30).live
    assert "in the future" in judged(YEAR_2286 - time.time()).reason


def test_a_corrupt_hold_is_refused_by_a_plain_stop_and_ended_by_a_forced_one(
    control: ControlArea, processes: list[Any]
) -> None:
    driver = started(control, "d-real", "--obey", "--record-deployment", processes=processes)
    control.write_json(ControlArea.HOLD, {"holder": "x", "expires_at": "tomorrow"})
    control.write_json(ControlArea.REVOKED_HOLDS, {"holders": "not a list of holders"})
    checkpoint = control.url.removesuffix(".async-stream")

    plain = cli("stop", checkpoint)
    assert plain.returncode == 2 and "revoked-holds.json: holders should be an object" in plain.stderr, plain
    assert len(plain.stderr.splitlines()) == 1
    assert _alive(driver)  # type: ignore[arg-type]

    forced = cli("stop", checkpoint, "--force")
    assert forced.returncode == 0 and "ended the hold of an unreadable hold" in forced.stdout, forced
    assert "stopped: state stopped" in forced.stdout and driver.wait(timeout=10) == 0
