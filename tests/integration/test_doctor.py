"""``doctor`` on jobs made sick for real, with real Spark. A job turned synchronous by hand over async gaps: the
provider refuses the synchronous deploy, the user's override dies with ``batch N doesn't exist``, ``doctor`` names
it and the cure, and the safe-disable migration DAG cures it without changing a file the checkpoint held. A
checkpoint a plain PySpark job left with gaps. A second writer."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from airflow_async_stream.exceptions import DriverFailedError, UnsafeSyncRestartError
from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.stop import StopStreamingJobOperator
from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from tests.helpers import rate_noop, until
from tests.integration.helpers import checkpoint_files, run_dag, task_states, write_dag, write_job_dag, xcom

pytestmark = pytest.mark.integration
CLI = [sys.executable, "-m", "airflow_async_stream.cli"]
SPARK_SAID = ("doesn't exist", "not found in offset log")


def _doctor(checkpoint: str, *args: str, running: bool = False) -> subprocess.CompletedProcess[str]:
    """``doctor`` on the checkpoint, which it must leave as it was; a ``running`` job may add its next batches
    meanwhile (no file there before changed or deleted)."""
    before = checkpoint_files(checkpoint)
    result = subprocess.run([*CLI, "doctor", checkpoint, *args], capture_output=True, text=True, timeout=60)
    if running:
        _unchanged(checkpoint, before)
    else:
        assert checkpoint_files(checkpoint) == before, "doctor changed the checkpoint"
    return result


def _gapped(spec: dict, checkpoint: str) -> None:
    """Run the job with async on until its offsets have gaps under the newest batch, then stop it."""
    DeployStreamingJobOperator(task_id="start", spec=spec, startup_timeout_s=180).execute({})
    until(
        lambda: not (found := inspect_checkpoint(checkpoint)).sync_restart_safe and len(found.offsets.ids) >= 3,
        120,
        what="gaps in offsets/",
        every_s=0.2,
    )
    StopStreamingJobOperator(task_id="stop", spec=spec).execute({})


def _async_job(name: str, checkpoint: str) -> dict:
    return rate_noop(
        name,
        checkpoint,
        rows=200,
        trigger={"processing_time": "100 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 3000},
    )


def _unchanged(checkpoint: str, before: dict[str, str]) -> None:
    after = checkpoint_files(checkpoint)
    changed = sorted(name for name, digest in before.items() if after.get(name) != digest)
    assert not changed, f"checkpoint files deleted or rewritten: {changed}"


def _runs_synchronously_on_a_safe_checkpoint(checkpoint: str) -> None:
    status = ControlArea.for_checkpoint(checkpoint).read_status()
    assert liveness(status).live and status.configuration["async_progress"]["enabled"] is False
    assert inspect_checkpoint(checkpoint).sync_restart_safe


def test_a_job_turned_off_by_hand_is_refused_diagnosed_and_cured(airflow_db: None, checkpoint_dir: str) -> None:
    spec = _async_job("crash-loop", checkpoint_dir)
    _gapped(spec, checkpoint_dir)
    stopped = inspect_checkpoint(checkpoint_dir)
    assert not stopped.sync_restart_safe and "doesn't exist" in stopped.reason, stopped.offsets.ids
    files_before = checkpoint_files(checkpoint_dir)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deployed_before = control.read_deployment().deployment_id

    # Async turned off by hand: the provider refuses before spark-submit, naming the cure.
    sync = {**spec, "async_progress": {"enabled": False}}
    with pytest.raises(UnsafeSyncRestartError, match="safe-disable migration"):
        DeployStreamingJobOperator(task_id="sync", spec=sync).execute({})
    assert control.read_deployment().deployment_id == deployed_before, "a refused deploy submitted a driver"

    # The user insists: Spark dies at start, as users report it.
    with pytest.raises(DriverFailedError) as crashed:
        DeployStreamingJobOperator(task_id="sync", spec=sync, allow_unsafe_sync_restart=True).execute({})
    assert any(words in str(crashed.value) for words in SPARK_SAID), str(crashed.value)[-2000:]

    text = _doctor(checkpoint_dir)
    print(text.stdout)
    assert text.returncode == 1, text.stderr
    assert text.stdout.splitlines()[1].startswith("diagnosis    batch_missing: a synchronous restart dies with")
    assert "- driver log: " in text.stdout and "safe_disable_async_progress" in text.stdout
    diagnosis = json.loads(_doctor(checkpoint_dir, "--json").stdout)
    assert (diagnosis["diagnosis"], diagnosis["sync_restart_safe"]) == ("batch_missing", False)
    assert diagnosis["choices"][0]["re_run_batches"] in (0, 1)

    # The cure, from the failed job and its synchronous spec, as a user's DAG runs it.
    dag = write_job_dag(
        "cure_crash_loop",
        sync,
        "safe_disable_async_progress(SPEC, startup_timeout_s=180, wait_timeout_s=120, deferrable=False)",
    )
    started = time.monotonic()
    cured = run_dag(dag, "cure_crash_loop")
    took = time.monotonic() - started
    steps = task_states(cured)
    assert steps.pop("safe_disable.rollback_to_async") == "skipped" and set(steps.values()) == {"success"}, steps
    stages = xcom(cured, "safe_disable.release_job")["stages"]
    for ti in sorted(cured.get_task_instances(), key=lambda ti: ti.start_date or ti.end_date):
        print(f"{ti.task_id:<40} {ti.state:<8} {ti.duration or 0:6.2f} s")
    print(f"migration {took:.1f} s; stages: {[(s['to'], s['how'], s['pause_s']) for s in stages]}")
    assert [s["to"] for s in stages] == ["async_interval_0", "synchronous"], stages
    assert stages[0]["how"] == "restart"  # the job was not running: redeployed with async on, interval 0
    # ... so nothing paused: the time it stood crashed is no pause (it was logged as `pause 58.09 s`)
    assert stages[0]["pause_s"] is None and stages[0]["unmeasured"].startswith("the job was not running before")
    assert stages[1]["pause_s"] is not None  # the migration's own switch of a running job

    _runs_synchronously_on_a_safe_checkpoint(checkpoint_dir)
    _unchanged(checkpoint_dir, files_before)
    healthy = _doctor(checkpoint_dir, running=True)  # the cured job runs: its batches go on
    assert healthy.returncode == 0 and "diagnosis    nothing_known" in healthy.stdout, healthy.stdout


def test_a_rollout_cures_a_crash_looping_synchronous_job(airflow_db: None, checkpoint_dir: str, tmp_path: Path) -> None:
    spec = _async_job("rollout-cure", checkpoint_dir)
    _gapped(spec, checkpoint_dir)
    files_before = checkpoint_files(checkpoint_dir)
    sync = {**spec, "async_progress": {"enabled": False}}
    with pytest.raises(DriverFailedError):
        DeployStreamingJobOperator(task_id="sync", spec=sync, allow_unsafe_sync_restart=True).execute({})
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'fleet-index'}\n")
    (folder / "rollout-cure.yaml").write_text(yaml.safe_dump(sync))
    [item] = plan_folder(folder)
    assert (item.action, item.how) == ("safe_disable", "restart"), item.reason

    path = write_dag(
        "cure_by_rollout",
        f"""
        from airflow_async_stream.factories import rollout_dag
        rollout_dag({str(folder)!r}, dag_id="cure_by_rollout", startup_timeout_s=180, wait_timeout_s=120)
        """,
    )
    rolled = run_dag(path, "cure_by_rollout")
    assert rolled.state == "success", task_states(rolled)
    _runs_synchronously_on_a_safe_checkpoint(checkpoint_dir)
    _unchanged(checkpoint_dir, files_before)


def test_doctor_reads_a_checkpoint_spark_wrote_without_this_project(checkpoint_dir: str) -> None:
    """A plain PySpark job's checkpoint left with gaps: no control area, the files alone speak."""
    script = Path(__file__).resolve().parent / "spark_scripts" / "plain_rate_noop.py"
    made = subprocess.run(
        [sys.executable, str(script), checkpoint_dir, "gaps"], capture_output=True, text=True, timeout=300
    )
    assert made.returncode == 0, made.stderr[-3000:]
    diagnosis = json.loads(_doctor(checkpoint_dir, "--json").stdout)
    assert (diagnosis["diagnosis"], diagnosis["control_area"], diagnosis["sync_restart_safe"]) == (
        "batch_missing",
        False,
        False,
    )
    assert not ControlArea.for_checkpoint(checkpoint_dir).exists()


def test_a_second_writer_made_for_real_is_diagnosed(checkpoint_dir: str) -> None:
    """The deployed driver hangs (SIGSTOP: an orphaned JVM as users meet it), a plain PySpark query writes the
    same checkpoint meanwhile, and the driver resumes: Spark stops it on its next batch, and doctor names it."""
    spec = rate_noop("two-writers", checkpoint_dir, rows=200, trigger={"processing_time": "100 milliseconds"})
    DeployStreamingJobOperator(task_id="start", spec=spec, startup_timeout_s=180).execute({})
    control = ControlArea.for_checkpoint(checkpoint_dir)
    group = int(control.read_deployment().driver.launcher_pid)  # spark-submit leads its own process group
    os.killpg(group, signal.SIGSTOP)
    try:
        script = Path(__file__).resolve().parent / "spark_scripts" / "plain_rate_noop.py"
        other = subprocess.run(
            [sys.executable, str(script), checkpoint_dir, "second"], capture_output=True, text=True, timeout=300
        )
        assert other.returncode == 0 and json.loads(other.stdout.splitlines()[-1])["error"] is None, other.stderr
    finally:
        os.killpg(group, signal.SIGCONT)
    until(lambda: control.read_status().state == "failed", 60, what="the resumed driver failing", every_s=0.2)
    diagnosis = json.loads(_doctor(checkpoint_dir, "--json").stdout)
    assert diagnosis["diagnosis"] == "second_writer", diagnosis
    said = ("Multiple streaming jobs detected", "Multiple streaming queries are concurrently using")  # by timing
    assert any(words in line for line in diagnosis["evidence"] for words in said), diagnosis["evidence"]
