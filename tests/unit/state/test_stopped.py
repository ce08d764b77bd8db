"""A stop on purpose is recorded by the one who stopped, for the deployment it stopped, and ends with the next
deployment. Real processes (tests/fake_driver.py, no Spark)."""

from __future__ import annotations

import getpass
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, stop_job
from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.records import Deployment
from airflow_async_stream.state.stopped import BY_FILE, BY_PERSON, stopped_on_purpose
from tests.fake_driver import command as fake_driver
from tests.helpers import rate_noop, until
from tests.unit.cli_run import cli

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def live(tmp_path: Path) -> Iterator[ControlArea]:
    """A fake driver of this host that obeys a stop, with its deployment record."""
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    process = subprocess.Popen(
        fake_driver(control.url, "d1", "--obey", "--record-deployment"), cwd=ROOT, start_new_session=True
    )
    until(lambda: (control.read_json(ControlArea.STATUS) or {}).get("state") == "running", 30)
    yield control
    if process.poll() is None:
        process.kill()
    process.wait()


def test_the_stop_command_records_a_persons_stop(live: ControlArea, tmp_path: Path) -> None:
    assert stopped_on_purpose(live) is None
    done = cli("stop", str(tmp_path / "ck"))
    assert done.returncode == 0, done
    stopped = stopped_on_purpose(live)
    assert stopped is not None
    assert (stopped.kind, stopped.by, stopped.deployment_id) == (
        BY_PERSON,
        f"{getpass.getuser()}@{socket.gethostname()}",
        "d1",
    )
    assert stopped.reason == "stop from the command line" and abs(stopped.at - time.time()) < 60
    assert stopped.describe().startswith(f"stopped by a person ({stopped.by}) at ")
    shown = cli("status", str(tmp_path / "ck")).stdout
    [line] = [line for line in shown.splitlines() if line.startswith("stopped ")]
    assert line.endswith(": stop from the command line; `airflow-async-stream resume` starts it"), line


def test_a_later_deployment_ends_the_stop_and_nothing_is_deleted(live: ControlArea) -> None:
    stop_job(live, Holder.this_process("test"), DeploySettings(), "suspended", on_purpose=(BY_FILE, "/fleet"))
    stopped = stopped_on_purpose(live)
    assert stopped is not None and (stopped.kind, stopped.by) == (BY_FILE, "/fleet")
    assert stopped.describe().startswith("suspended by its file at ")
    live.write_json(ControlArea.DEPLOYMENT, Deployment(deployment_id="d2").to_json())
    assert stopped_on_purpose(live) == stopped  # a deployment record alone: anyone writing the storage can
    ledger.write(live, ledger.DEPLOYED, {"deployment_id": "d2"})  # a deploy of the Airflow side writes this
    assert stopped_on_purpose(live) is None
    assert live.read_json(ControlArea.STOPPED) == stopped.to_json()


def test_a_plain_stop_records_nothing(live: ControlArea) -> None:
    """The stops a rollout or a migration makes on their way are no stop on purpose."""
    stop_job(live, Holder.this_process("test"), DeploySettings(), "retired")
    assert live.read_json(ControlArea.STOPPED) is None


def test_resume_refuses_a_job_that_runs(live: ControlArea, tmp_path: Path) -> None:
    done = cli("resume", str(tmp_path / "ck"))
    assert done.returncode == 1, done
    assert done.stderr.strip() == "airflow-async-stream: not resumed: it runs (deployment d1, healthy)"


def test_the_stop_operator_records_a_persons_stop_outside_a_dag_run_too(live: ControlArea, tmp_path: Path) -> None:
    from airflow_async_stream.operators.stop import StopStreamingJobOperator

    spec = rate_noop("job", str(tmp_path / "ck"))
    StopStreamingJobOperator(task_id="stop_it", spec=spec, kill_after_s=30).execute({})  # type: ignore[arg-type]
    stopped = stopped_on_purpose(live)
    assert stopped is not None and stopped.kind == BY_PERSON
    assert stopped.by == f"task stop_it ({getpass.getuser()}@{socket.gethostname()})"
