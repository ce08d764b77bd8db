"""A person's stop always works: with the job's control area broken (a folder where a file should be), ``stop``
still ends a driver that proves itself by its own process and says what it could not record; ``release
--force`` sets a broken fence or hold aside; a driver whose records cannot be written is never called crashed
while its process runs; a failed write leaves no temporary file. Fake drivers (real processes), no Spark."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import command_line, liveness
from airflow_async_stream.state.records import Status
from airflow_async_stream.state.stopped import stopped_on_purpose
from tests.fake_driver import started
from tests.helpers import until
from tests.unit.cli_run import cli


@pytest.fixture
def running(tmp_path: Path) -> Iterator[tuple[ControlArea, subprocess.Popen[bytes]]]:
    """A job whose (fake) driver runs, launched from this host as a deploy launches it."""
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    processes: list[subprocess.Popen[bytes]] = []
    driver = started(control, "d-1", "--obey", "--record-deployment", processes=processes)
    yield control, driver
    for process in processes:
        if process.poll() is None:
            process.kill()
        process.wait()


def _break(control: ControlArea, name: str) -> None:
    path = Path(control.path(name))
    path.unlink(missing_ok=True)
    path.mkdir()
    (path / "something").write_text("kept")  # a folder with contents: set aside, never deleted


@pytest.mark.parametrize("force", [False, True])
def test_stop_ends_a_provable_driver_when_the_fence_is_a_folder(
    running: tuple[ControlArea, subprocess.Popen[bytes]], force: bool
) -> None:
    control, driver = running
    _break(control, ControlArea.FENCE)

    done = cli(
        "stop", control.url.removesuffix(".async-stream"), "--graceful-timeout", "5", *(["--force"] if force else [])
    )

    assert done.returncode == 0, done
    assert done.stdout.startswith("stopped by signal (its control area cannot carry a stop: "), done
    assert "fence.json" in done.stdout and f"pid {driver.pid} stopped on SIGTERM" in done.stdout, done
    driver.wait(10)
    stopped = stopped_on_purpose(control)  # the supervisor will not take it for a crash
    assert stopped is not None and stopped.deployment_id == "d-1" and stopped.reason == "stop by signal"


def test_stop_says_so_when_no_driver_of_this_host_proves_itself(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    _break(control, ControlArea.FENCE)
    # names the area, but no deployment
    sleeper = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(60)", "--control-area", control.url], start_new_session=True
    )
    try:
        done = cli("stop", str(tmp_path / "ck"))
        assert done.returncode == 1 and "Traceback" not in done.stderr, done
        assert "no process of this host proves to be its driver: stop it on the host that launched it" in done.stderr
        assert sleeper.poll() is None
    finally:
        sleeper.kill()
        sleeper.wait()


def test_release_force_sets_a_broken_fence_aside_and_a_stop_works_again(
    running: tuple[ControlArea, subprocess.Popen[bytes]],
) -> None:
    control, driver = running
    _break(control, ControlArea.FENCE)
    refused = cli("release", control.url)
    assert refused.returncode == 1 and "fence.json: " in refused.stderr and "add --force" in refused.stderr, refused

    released = cli("release", control.url, "--force")

    assert released.returncode == 0, released
    [aside] = [p for p in Path(control.root).iterdir() if p.name.startswith("fence.json.unreadable-")]
    assert (aside / "something").read_text() == "kept"
    assert f"set aside an unreadable fence.json as {aside.name}" in released.stdout
    assert control.read_json(ControlArea.FENCE)["revoked"] > 10**12  # type: ignore[index]  # every earlier hold ended
    stopped = cli("stop", control.url, "--graceful-timeout", "10")  # the ordinary stop, by request
    assert (stopped.returncode, stopped.stdout.strip()) == (0, "stopped: state stopped"), stopped
    driver.wait(10)


def test_release_force_sets_a_hold_that_is_a_folder_aside(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    _break(control, ControlArea.HOLD)
    released = cli("release", control.url, "--force")
    assert released.returncode == 0 and "set aside an unreadable hold.json" in released.stdout, released
    assert cli("release", control.url).stdout.strip() == "nobody holds this job"


def test_a_driver_that_cannot_write_its_status_is_not_called_crashed(tmp_path: Path) -> None:
    process = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "--deployment-id", "d-7"])
    try:
        until(lambda: "d-7" in (command_line(process.pid) or []), 30, what="the process's command line")
        stale = Status(
            deployment_id="d-7",
            state="running",
            pid=process.pid,
            host=socket.gethostname(),
            heartbeat_at=time.time() - 600,
        )
        judged = liveness(stale)
        assert judged.live and f"its driver process {process.pid} runs on this host" in judged.reason, judged
        # The same pid named by another deployment's record is not that driver: gone, as before.
        assert not liveness(Status(**{**stale.to_json(), "deployment_id": "d-8"})).live
    finally:
        process.kill()
        process.wait()
    until(lambda: not liveness(stale).live, 10, what="the verdict once the process is gone")


def test_a_failed_write_leaves_no_temporary_file(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    _break(control, ControlArea.STATUS)
    with pytest.raises(OSError):
        control.write_json(ControlArea.STATUS, {"state": "running"})
    assert sorted(p.name for p in Path(control.root).iterdir()) == ["status.json"]
