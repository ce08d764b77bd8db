"""The command line started as a process, for what only a process shows: the console script's exit into a
closed pipe, a user without the right to read, the airflow.cfg Airflow reads at start, and the commands that run
where Airflow cannot be imported. Every other unit test calls it in-process (tests/unit/cli_run.py); a stop
from a second host (``unshare``) is the one other process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from airflow_async_stream.state.control import ControlArea
from tests.fake_driver import started
from tests.session import REPO
from tests.unit.helpers import BLOCK_AIRFLOW, fake_deployment, gapped_checkpoint

CLI = str(Path(sys.executable).parent / "airflow-async-stream")
GOOD = """name: good-job
checkpoint: /tmp/ck/good-job
source: {format: rate}
sink: {format: kafka, options: {topic: out}}
async_progress: {enabled: true, checkpoint_interval_ms: 0}
"""


def _as_unprivileged(command: list[str]) -> list[str]:
    """As root, drop the capabilities that bypass file permissions, so a closed folder is really closed."""
    if os.geteuid() == 0:
        return ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    return command


def test_output_into_a_closed_pipe_is_no_error(tmp_path: Path) -> None:
    """`airflow-async-stream status ... | head`: head exits early; no '[Errno 32] Broken pipe'."""
    fake_deployment(tmp_path)
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first line is written
    try:
        result = subprocess.run(
            [CLI, "status", str(tmp_path / "ck")], stdout=write_end, stderr=subprocess.PIPE, text=True
        )
    finally:
        os.close(write_end)
    assert result.stderr == "" and result.returncode == 141, result


def test_files_and_folders_it_may_not_read_are_one_line_errors(tmp_path: Path) -> None:
    (tmp_path / "locked.yaml").write_text(GOOD)
    (tmp_path / "locked.yaml").chmod(0)
    command = _as_unprivileged([CLI, "validate", str(tmp_path / "locked.yaml")])
    result = subprocess.run(command, capture_output=True, text=True)
    assert result.returncode == 2 and "locked.yaml: (file): cannot be read: Permission denied" in result.stdout

    root = gapped_checkpoint(tmp_path / "ck")
    (root / "offsets").chmod(0)
    try:
        result = subprocess.run(_as_unprivileged([CLI, "inspect", str(root)]), capture_output=True, text=True)
    finally:
        (root / "offsets").chmod(0o755)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stderr.strip() == f"airflow-async-stream: cannot list {root}/offsets: permission denied"


def test_settings_that_cannot_be_read_are_an_error(tmp_path: Path) -> None:
    """Airflow reads its airflow.cfg as a process starts: a broken one is one line, never a fallback."""
    (tmp_path / "af").mkdir()
    (tmp_path / "af" / "airflow.cfg").write_text("[async_stream]\nfleet_indexes = /a\n[async_stream]\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW__ASYNC_STREAM__")}
    env |= {"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "empty-home"), "AIRFLOW_HOME": str(tmp_path / "af")}
    unread = subprocess.run([CLI, "status", "orders"], capture_output=True, text=True, env=env, timeout=120)
    assert unread.returncode == 2 and unread.stderr.count("\n") == 1, unread.stderr
    assert unread.stderr.startswith("airflow-async-stream: the [async_stream] settings cannot be read: Duplicate")


#: Runs each command of argv's JSON list in turn, in one process where Airflow cannot be imported.
_COMMANDS = """
import json
from tests.unit.cli_run import cli
print(json.dumps({name: vars(cli(*args)) for name, args in json.loads(sys.argv[1]).items()}))
"""


def test_the_cli_commands_that_need_no_connection_run_with_airflow_blocked(tmp_path: Path) -> None:
    """validate, plan, status, inspect, report, doctor, schema, switch and stop (of a driver of this host, killed when it
    does not stop) run where Airflow cannot be imported."""
    folder = tmp_path / "desired"
    folder.mkdir()
    spec = folder / "job.yaml"
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'fleet-index'}\n")
    checkpoint = tmp_path / "ck"
    spec.write_text(
        f"name: no-airflow\ncheckpoint: {checkpoint}\nsource: {{format: rate}}\nsink: {{format: noop}}\n"
        "async_progress: {enabled: true, checkpoint_interval_ms: 0}\n"
    )
    control = ControlArea.for_checkpoint(str(checkpoint))
    control.ensure()
    commands = {
        "validate": ["validate", str(spec)],
        "plan": ["plan", str(folder)],
        "status": ["status", str(spec)],
        "inspect": ["inspect", str(spec)],
        "report": ["report", str(spec), "--png", str(tmp_path / "chart.png")],
        "doctor": ["doctor", str(spec)],
        "schema": ["schema"],
        "switch": ["switch", str(spec), "--set", "async_progress.enabled=false"],
        "stop": ["stop", str(spec), "--graceful-timeout", "0.1", "--kill-after", "0.3"],
    }
    processes: list[subprocess.Popen[bytes]] = []
    try:
        driver = started(control, "d-1", "--record-deployment", processes=processes)
        done = subprocess.run(
            [sys.executable, "-c", BLOCK_AIRFLOW + _COMMANDS, json.dumps(commands)],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=120,
        )
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
            process.wait()
    assert done.returncode == 0, done.stderr
    answers = json.loads(done.stdout)
    assert all("Airflow is blocked" not in r["stdout"] + r["stderr"] for r in answers.values()), answers
    codes = {name: r["returncode"] for name, r in answers.items() if name not in ("switch", "stop", "inspect")}
    assert codes == dict.fromkeys(("validate", "plan", "status", "report", "doctor", "schema"), 0), answers
    assert (tmp_path / "chart.png").stat().st_size > 0
    assert "its query never started" in answers["inspect"]["stderr"], answers["inspect"]  # a fake driver's
    assert "Traceback" not in answers["switch"]["stderr"], answers["switch"]["stderr"]
    # The fake driver ignores the stop request: this host's launcher kills it, with no Airflow to help.
    assert answers["stop"]["stdout"] == "stopped: state failed\n", answers["stop"]
    assert driver.returncode == -9
    assert (control.read_status().error or "").startswith("killed: no final status")
