"""What people and Airflow read of a job whose checkpoint and control area live on an object store: a real
Spark checkpoint and the control area its driver wrote, copied file by file to moto's S3 server and to
Azurite. ``status``, ``inspect``, ``doctor``, ``report`` and ``list`` (other processes), the page's API, and the
deferred sensor's trigger waiting there for a commit another process writes."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import fsspec
import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.records import State, now
from airflow_async_stream.triggers.committed_batches import CommittedBatchesTrigger
from tests.helpers import rate_noop, until
from tests.stores import copy_tree

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real checkpoint and control area: a synchronous rate -> noop job that committed a few batches."""
    checkpoint = str(tmp_path_factory.mktemp("ran") / "clicks")
    spec = parse_spec(rate_noop("clicks", checkpoint, rows=20, trigger={"processing_time": "300 milliseconds"}))
    deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    until(lambda: len(batch_ids(checkpoint, "commits")) >= 5, 90, what="five commits")
    stop_driver(ControlArea.for_checkpoint(checkpoint), "copied to object stores", launcher=LocalLauncher())
    return Path(checkpoint)


@pytest.fixture(scope="module")
def copied(ran: Path, store: Any) -> str:
    """The job's checkpoint URL on the store, its control area beside it."""
    url = store.url("fleet/clicks")
    copy_tree(ran, url)
    copy_tree(Path(f"{ran}.async-stream"), f"{url}.async-stream")
    return url


def _cli(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120, env={**os.environ, **env})


def test_status_inspect_doctor_and_report_read_the_job_on_the_store(copied: str, ran: Path) -> None:
    status = _cli("status", copied, "--json")
    assert status.returncode == 0, status.stderr
    assert json.loads(status.stdout)["status"]["state"] == "stopped"
    inspected = _cli("inspect", copied, "--json")
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["latest_commit"] == max(batch_ids(str(ran), "commits"))
    doctor = _cli("doctor", copied)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    report = _cli("report", copied)
    assert report.returncode == 0 and "p50" in report.stdout, report.stdout + report.stderr


def test_list_and_the_pages_api_find_it_in_a_checkpoint_folder_on_the_store(
    copied: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    folder = copied.rsplit("/", 1)[0]
    alone = str(tmp_path / "home")  # a registry of its own: the jobs other tests of this session deployed are not here
    listed = _cli("list", "--json", AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS=folder, AIRFLOW_ASYNC_STREAM_HOME=alone)
    assert listed.returncode == 0, listed.stdout + listed.stderr
    assert [(row["name"], row["error"]) for row in json.loads(listed.stdout)] == [("clicks", None)]  # JSON alone
    from airflow_async_stream.plugin.app import list_jobs, one_job

    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", folder)
    rows = list_jobs()["jobs"]
    assert [row["name"] for row in rows] == ["clicks"] and rows[0]["state"] == "stopped"
    assert one_job("clicks")["checkpoint"] == copied


def test_the_deferred_sensor_sees_a_commit_another_process_writes_to_the_store(copied: str) -> None:
    control = ControlArea(f"{copied}.async-stream")
    running = control.read_status().but(
        state=State.RUNNING, heartbeat_at=now(), host="elsewhere", pid=None, deployment_id="20261128T052000Z-bbbbbbbb"
    )
    control.write_status(running)  # a new driver of another host runs it
    latest = batch_ids(copied, "commits")[-1]
    trigger = CommittedBatchesTrigger(
        copied, latest, 1, deadline=time.time() + 60, started_at=time.time(), poll_interval=0.2
    )

    async def wait_then_commit() -> dict[str, Any]:
        events = trigger.run()
        waiting = asyncio.ensure_future(events.__anext__())
        await asyncio.sleep(1.0)  # it has polled, and listed the commits, several times
        assert not waiting.done(), waiting.result().payload
        fs, root = fsspec.core.url_to_fs(copied, skip_instance_cache=True)  # the driver's own client
        await asyncio.to_thread(fs.pipe_file, f"{root}/commits/{latest + 1}", b'v1\n{"nextBatchWatermarkMs":0}\n')
        event = await asyncio.wait_for(waiting, 30)
        return dict(event.payload)

    event = asyncio.run(wait_then_commit())
    assert event["status"] == "success", event
    assert event["check"]["latest_commit"] == latest + 1
