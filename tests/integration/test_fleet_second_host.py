"""A rollout's fleet seen from a second host: the one its next run may land on (Celery, a new pod).

Host one deploys a small fleet through a rollout; a job's file is then removed and another's checkpoint
moved. A second host is ``unshare --uts --pid --fork --mount-proc`` with its own hostname, its own process
space and an empty HOME (so no job registry), over the same files: its plan must retire the removed job and
refuse the move exactly as host one's does, and its rollout must retire the job host one's driver runs
(by a graceful stop request: it may not signal another host's process). The retired job is listed once
more, then leaves the plan.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from tests.integration.helpers import fleet_job, run_dag, task_states, write_dag
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent
SECOND_HOST = "rollout-worker-2"


def _on_second_host(
    tmp_path: Path, *command: str, timeout: float = 600, settings: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``command`` on the simulated second host: own hostname and pids, empty HOME, no registry setting, and
    ``settings`` as its Airflow's environment (e.g. ``AIRFLOW__ASYNC_STREAM__FLEET_INDEXES``)."""
    home = tmp_path / "second-host-home"
    home.mkdir(exist_ok=True)
    env = {**os.environ, "HOME": str(home), **(settings or {})}
    env.pop("AIRFLOW_ASYNC_STREAM_HOME", None)
    script = f'hostname {SECOND_HOST} && exec "$@"'
    return subprocess.run(
        ["unshare", "--uts", "--pid", "--fork", "--mount-proc", "sh", "-c", script, "sh", *command],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _plan(folder: Path, tmp_path: Path | None = None) -> list[dict[str, Any]]:
    """``airflow-async-stream plan --json`` here, or on the second host when ``tmp_path`` is given."""
    command = [str(BIN / "airflow-async-stream"), "plan", "--json", str(folder)]
    done = _on_second_host(tmp_path, *command) if tmp_path else subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def _actions(plan: list[dict[str, Any]]) -> dict[str, str]:
    return {item["job"]: item["action"] for item in plan}


def _rollout_record(spec: dict[str, Any]) -> tuple[str, str]:
    record = ControlArea.for_checkpoint(spec["checkpoint"]).read_json(ControlArea.ROLLOUT) or {}
    return record.get("action", ""), record.get("outcome", "")


def test_a_second_host_retires_removed_jobs_and_refuses_moves_like_the_first(airflow_db: None, tmp_path: Path) -> None:
    root = CHECKPOINT_ROOT / f"fleet2-{uuid.uuid4().hex[:8]}"
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "_fleet.yaml").write_text(f"index: {root / 'fleet-index'}\n")
    specs = {name: fleet_job(root, name) for name in ("kept", "removed", "moved")}
    for name, spec in specs.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    path = write_dag(
        "fleet_two_hosts",
        f"""
        from airflow_async_stream.factories import rollout_dag

        rollout_dag({str(folder)!r}, dag_id="fleet_two_hosts", startup_timeout_s=240, wait_timeout_s=120)
        """,
    )

    # Host one deploys the fleet.
    run = run_dag(path, "fleet_two_hosts")
    assert str(run.state) == "success", task_states(run)
    assert {name: _rollout_record(spec) for name, spec in specs.items()} == {n: ("deploy", "done") for n in specs}

    # A file removed, a checkpoint moved.
    (folder / "removed.yaml").unlink()
    (folder / "moved.yaml").write_text(yaml.safe_dump({**specs["moved"], "checkpoint": str(root / "moved-v2")}))

    # The second host knows nothing of host one's registry, yet plans exactly as host one does.
    unknown = _on_second_host(tmp_path, str(BIN / "airflow-async-stream"), "status", "kept")
    assert unknown.returncode != 0 and "no job named 'kept'" in unknown.stdout + unknown.stderr
    # ... until its Airflow names the fleet index: then the name resolves there as here.
    index = {"AIRFLOW__ASYNC_STREAM__FLEET_INDEXES": str(root / "fleet-index")}
    named = _on_second_host(tmp_path, str(BIN / "airflow-async-stream"), "status", "--json", "kept", settings=index)
    assert named.returncode == 0, named.stderr
    assert json.loads(named.stdout)["control_area"] == ControlArea.for_checkpoint(specs["kept"]["checkpoint"]).url
    here, there = _plan(folder), _plan(folder, tmp_path)
    assert there == here
    assert _actions(there) == {"kept": "unchanged", "removed": "retire", "moved": "refuse"}

    # The second host's rollout retires the job host one's driver runs, and leaves the moved one as it runs.
    moved_before = ControlArea.for_checkpoint(specs["moved"]["checkpoint"]).read_json(ControlArea.DEPLOYMENT)
    second = _on_second_host(tmp_path, str(BIN / "airflow"), "dags", "test", "fleet_two_hosts")
    outcomes = {name: _rollout_record(spec) for name, spec in specs.items()}
    assert outcomes == {
        "kept": ("unchanged", "unchanged"),
        "removed": ("retire", "done"),
        "moved": ("refuse", "refused"),
    }, second.stdout[-3000:] + second.stderr[-3000:]
    removed_status = ControlArea.for_checkpoint(specs["removed"]["checkpoint"]).read_status()
    assert removed_status is not None and removed_status.state == "stopped"
    assert not liveness(removed_status).live
    moved = ControlArea.for_checkpoint(specs["moved"]["checkpoint"])
    assert moved.read_json(ControlArea.DEPLOYMENT) == moved_before and liveness(moved.read_status()).live
    assert not ControlArea.for_checkpoint(str(root / "moved-v2")).exists(), "a second job was deployed"

    # Listed once more as retired (from either host), then gone from the plan.
    (again,) = [item for item in _plan(folder, tmp_path) if item["job"] == "removed"]
    assert again["action"] == "unchanged" and again["reason"].startswith("retired by rollout run ")
    run = run_dag(path, "fleet_two_hosts")
    assert task_states(run)["summary"] == "failed"  # the refused move keeps the run short of its desired state
    assert _actions(_plan(folder, tmp_path)) == _actions(_plan(folder)) == {"kept": "unchanged", "moved": "refuse"}
