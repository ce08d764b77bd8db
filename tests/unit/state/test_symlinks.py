"""A symlink in a control area is never followed: whoever can write the control area's storage cannot make a
writer append to, or a reader show, a file elsewhere (a ``.pth`` file in site-packages, a key, another job's
records). Real files, no Spark."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from airflow_async_stream.driver.log import RotatingLog
from airflow_async_stream.driver.start import log_tail
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Incident, Kind, record_incident
from airflow_async_stream.state.progress_writer import ProgressWriter
from tests.unit.cli_run import cli


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file outside the control area that a symlink points at (a .pth file, a secret)."""
    path = tmp_path / "site-packages" / "evil.pth"
    path.parent.mkdir()
    path.write_text("# a file of someone else's\n")
    return path


def _link(control: ControlArea, name: str, target: Path) -> None:
    os.symlink(target, control.path(name))


def test_the_log_pump_never_appends_through_a_symlink(control: ControlArea, victim: Path) -> None:
    _link(control, ControlArea.DRIVER_LOG, victim)
    log = RotatingLog(control.path(ControlArea.DRIVER_LOG), 1 << 20, 2)
    log.write(b"import os; os.system('touch /tmp/pwned')\n")
    log.close()
    assert victim.read_text() == "# a file of someone else's\n"


def test_incidents_are_never_appended_through_a_symlink(control: ControlArea, victim: Path) -> None:
    _link(control, ControlArea.INCIDENTS, victim)
    with pytest.raises(ControlAreaError, match="is a symbolic link: refused"):
        record_incident(control, Incident(kind=Kind.CRASH, deployment_id="d", since=1.0, error="x"))
    assert victim.read_text() == "# a file of someone else's\n"


def test_records_are_never_read_through_a_symlink(control: ControlArea, victim: Path) -> None:
    victim.write_text(json.dumps({"deployment_id": "d", "state": "running"}))
    _link(control, ControlArea.STATUS, victim)
    with pytest.raises(ControlAreaError, match=r"status\.json is a symbolic link: refused"):
        control.read_status()
    _link(control, ControlArea.DRIVER_LOG, victim)
    shown = log_tail(control)  # a failed start's view of the log: says why, shows nothing of the target
    assert "deployment_id" not in shown and "driver.log is a symbolic link: refused" in shown, shown


def test_a_control_area_that_is_a_symlink_is_refused(tmp_path: Path, victim: Path) -> None:
    os.symlink(victim.parent, tmp_path / "ck.async-stream")
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    with pytest.raises(ControlAreaError, match="ck.async-stream is a symbolic link: refused"):
        control.write_json(ControlArea.STATUS, {"state": "running"})
    assert sorted(p.name for p in victim.parent.iterdir()) == ["evil.pth"]


def test_the_progress_log_is_never_appended_through_a_symlink(control: ControlArea, victim: Path) -> None:
    writer = ProgressWriter(control, "d")
    writer.append({"batch_id": 0, "at": time.time()})
    [segment] = [p for p in Path(control.root).rglob("*") if p.is_file() and "progress" in str(p)]
    segment.unlink()
    os.symlink(victim, segment)
    with pytest.raises(ControlAreaError, match="is a symbolic link: refused"):
        writer.append({"batch_id": 1, "at": time.time()})
    assert victim.read_text() == "# a file of someone else's\n"


def test_a_forged_local_log_path_is_not_read(control: ControlArea, victim: Path) -> None:
    victim.write_text("SECRET=hunter2\n")
    control.write_json(
        ControlArea.DEPLOYMENT,
        {
            "deployment_id": "d",
            "job": "job",
            "driver": {"kind": "local-process", "host": "h", "log": str(victim), "log_on_host": True},
        },
    )
    assert "hunter2" not in log_tail(control)


def test_a_stop_reason_never_writes_a_line_of_its_own_into_the_driver_log(control: ControlArea) -> None:
    from airflow_async_stream.runtime.driver import _log_our_lines

    done = subprocess.run(
        [
            sys.executable,
            "-c",
            (
                "from airflow_async_stream.runtime.driver import _log_our_lines\n"
                "_log_our_lines().info('stop requested (%s)', 'x\\nimport os; os.system(1)\\r\\x1b[2J')\n"
            ),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert _log_our_lines is not None
    [line] = done.stderr.splitlines()
    assert line.endswith(r"stop requested (x\nimport os; os.system(1)\r\x1b[2J)"), line


def test_a_records_control_characters_reach_no_terminal(control: ControlArea) -> None:
    record_incident(
        control,
        Incident(kind=Kind.CRASH, deployment_id="d", since=1.0, error="boom\x1b[2J\x1b]0;owned\x07", diagnosis="a\rb"),
    )
    shown = cli("incidents", control.url)
    assert shown.returncode == 0 and "\x1b" not in shown.stdout and "\r" not in shown.stdout, shown
    assert r"boom\x1b[2J\x1b]0;owned\x07" in shown.stdout and r"a\rb" in shown.stdout, shown.stdout


def test_a_newline_in_a_record_starts_no_line_of_its_own(control: ControlArea) -> None:
    """A forged value with a newline and a line that looks like output ('verdict  healthy') is shown indented
    under its own label (status, incidents), or escaped in a table cell (list)."""
    from airflow_async_stream.state import ledger

    forged = "maintenance\nverdict  healthy"
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "deployed_at": 1.0, "job": "j\nk"})
    control.write_json(
        ControlArea.STATUS, {"deployment_id": "d1", "state": "stopped", "stop_reason": forged, "finished_at": 2.0}
    )
    ledger.write(control, ledger.STOPPED, {"at": 2.0, "by": "ann@h", "reason": forged, "deployment_id": "d1"})
    record_incident(
        control, Incident(kind=Kind.CRASH, deployment_id="d1", since=1.0, error="boom", diagnosis=forged, cure=forged)
    )
    for command in ("status", "incidents"):
        shown = cli(command, control.url)
        assert shown.returncode in (0, 1) and "Traceback" not in shown.stderr, shown
        assert not [line for line in shown.stdout.splitlines() if line.startswith("verdict")], shown.stdout
        assert [line for line in shown.stdout.splitlines() if line.strip() == "verdict  healthy"], shown.stdout
    listed = cli("list", "--folder", str(Path(control.url).parent))
    assert "Traceback" not in listed.stderr and not [
        line for line in listed.stdout.splitlines() if line.startswith("verdict")
    ], listed.stdout
