"""Rollouts of a desired-state folder through Airflow on the embedded local Spark.

One fleet, four rounds:
1. the rollout deploys five jobs from nothing;
2. the toggle-off DAG migrates only the job whose file turns async off;
3. the rollout brings the rest to a changed folder: a new job deployed, a trigger change updated, the
   migrated job left alone, a broken spec (which only a new driver can check) rolled back to its last
   stable spec, a source change refused
   and left running untouched, an unchanged job untouched;
4. a re-run of the same folder deploys nothing a second time.

And a rollout killed right after it submitted a job is picked up by the next run without a second deploy.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from tests.helpers import until
from tests.integration.helpers import fail_running_dag_runs, fleet_job, run_dag, task_states, write_dag
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration


def _write_folder(folder: Path, specs: dict[str, dict[str, Any]]) -> None:
    """The job files of ``specs`` (and no other), and the fleet file naming an index beside the folder."""
    folder.mkdir(parents=True, exist_ok=True)
    for old in folder.glob("*.yaml"):
        old.unlink()
    (folder / "_fleet.yaml").write_text(f"index: {folder.parent / 'fleet-index'}\n")
    for name, spec in specs.items():
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))


def _control(spec: dict[str, Any]) -> ControlArea:
    return ControlArea.for_checkpoint(spec["checkpoint"])


def _deployment_id(spec: dict[str, Any]) -> str:
    return str(_control(spec).read_json("deployment.json")["deployment_id"])


def _stable_deployment(spec: dict[str, Any], timeout_s: float = 30.0) -> str:
    """The deployment stable.json names. The driver writes it at its first progress event once two commits
    of its deployment exist; with async progress tracking a commit lands after its batch's event, so that
    can be one trigger interval after the rollout saw the two commits and finished."""
    record = until(lambda: _control(spec).read_json("stable.json"), timeout_s, what=f"{spec['name']}: stable.json")
    return str(record["deployment_id"])


def _running_spec(spec: dict[str, Any]) -> dict[str, Any]:
    control = _control(spec)
    status = control.read_json("status.json")
    assert liveness(status).live, f"{spec['name']} is not running: {status}"
    return json.loads(control.read_bytes("spec.json"))


def _outcomes(specs: dict[str, dict[str, Any]]) -> dict[str, tuple[str, str]]:
    """Each job's latest rollout (action, outcome); "confirmed" (unchanged, its commits checked) reads "unchanged"."""
    return {
        name: (record["action"], record["outcome"].replace("confirmed", "unchanged"))
        for name, spec in specs.items()
        if (record := _control(spec).read_json("rollout.json"))
    }


def test_rollouts_bring_the_fleet_to_the_folder(airflow_db: None, tmp_path: Path) -> None:
    root, folder = (
        CHECKPOINT_ROOT / f"fleet-{uuid.uuid4().hex[:8]}",
        tmp_path / "desired",
    )  # root: drivers stopped after
    v1 = {name: fleet_job(root, name) for name in ("steady", "retrigger", "toggle", "broken", "resourced")}
    _write_folder(folder, v1)
    path = write_dag(
        "fleet",
        f"""
        from airflow_async_stream.factories import rollout_dag, toggle_off_dag

        rollout_dag({str(folder)!r}, dag_id="fleet_rollout", max_parallel=2, startup_timeout_s=240, wait_timeout_s=120)
        toggle_off_dag({str(folder)!r}, dag_id="fleet_toggle_off", startup_timeout_s=240, wait_timeout_s=120)
        """,
    )

    # 1. From nothing: every job deployed and confirmed by committed batches.
    run = run_dag(path, "fleet_rollout")
    assert str(run.state) == "success", task_states(run)
    assert _outcomes(v1) == {name: ("deploy", "done") for name in v1}
    first = {name: _deployment_id(spec) for name, spec in v1.items()}
    for name, spec in v1.items():
        assert _stable_deployment(spec) == first[name], name

    # 2. The folder changes; the toggle-off DAG migrates only the job that turns async off.
    v2 = {
        "newcomer": fleet_job(root, "newcomer"),
        "steady": v1["steady"],
        "retrigger": fleet_job(root, "retrigger", trigger={"processing_time": "1 second"}),
        "toggle": fleet_job(root, "toggle", async_progress={"enabled": False}),
        # A Python transform is loaded only by a new driver (the running one cannot rehearse it): the old
        # driver is stopped, the new one fails at start, and the rollback restores the last stable spec.
        "broken": fleet_job(root, "broken", transform={"entrypoint": "no_such_module:transform"}),
        "resourced": fleet_job(
            root, "resourced", source={"format": "rate-micro-batch", "options": {"rowsPerBatch": 10}}
        ),
    }
    _write_folder(folder, v2)
    run = run_dag(path, "fleet_toggle_off")
    assert str(run.state) == "success", task_states(run)
    assert _running_spec(v2["toggle"])["async_progress"]["enabled"] is False
    assert inspect_checkpoint(v2["toggle"]["checkpoint"]).sync_restart_safe
    assert _deployment_id(v2["retrigger"]) == first["retrigger"], "the toggle-off DAG touched another job"
    assert not ControlArea.for_checkpoint(v2["newcomer"]["checkpoint"]).read_json("deployment.json")
    migrated = _deployment_id(v2["toggle"])

    # 3. The rollout: each job to its desired state, the broken one rolled back, the refused one untouched.
    run = run_dag(path, "fleet_rollout")
    states = task_states(run)
    assert str(run.state) == "failed" and states["summary"] == "failed", states
    assert _outcomes(v2) == {
        "newcomer": ("deploy", "done"),
        "steady": ("unchanged", "unchanged"),
        "retrigger": ("update", "done"),
        "toggle": ("unchanged", "unchanged"),
        "broken": ("update", "rolled_back"),
        "resourced": ("refuse", "refused"),
    }
    for name in ("newcomer", "retrigger", "toggle"):
        assert _running_spec(v2[name]) == v2[name], name
    # A trigger change and the migration switch the running driver in place; a transform change redeploys.
    assert _control(v2["retrigger"]).read_json("rollout.json")["how"] == "in_place"
    assert _deployment_id(v2["retrigger"]) == first["retrigger"]
    assert migrated == first["toggle"], "the migration started a new driver"
    assert _deployment_id(v2["steady"]) == first["steady"]
    assert _deployment_id(v2["toggle"]) == migrated
    assert _running_spec(v2["broken"]) == v1["broken"], "not rolled back to its last stable spec"
    broken = _control(v2["broken"]).read_json("rollout.json")
    assert "no_such_module" in broken["error"]
    assert _deployment_id(v2["resourced"]) == first["resourced"], "a refused change touched the job"
    assert _running_spec(v2["resourced"]) == v1["resourced"]
    # The next plan holds the broken spec back instead of trying (and rolling back) it at every run.
    planned = {item.job: item for item in plan_folder(folder)}
    assert planned["broken"].held_back and f"failed at {run.run_id}" in planned["broken"].reason
    assert "no_such_module" in planned["broken"].reason
    assert not planned["resourced"].held_back  # refused, not failed: nothing was tried

    # 4. The same folder, less the two changes that cannot be made: nothing is deployed a second time.
    v3 = {**v2, "broken": v1["broken"], "resourced": v1["resourced"]}
    _write_folder(folder, v3)
    before = {name: _deployment_id(spec) for name, spec in v3.items()}
    run = run_dag(path, "fleet_rollout")
    assert str(run.state) == "success", task_states(run)
    assert {name: _deployment_id(spec) for name, spec in v3.items()} == before
    assert {outcome for _, outcome in _outcomes(v3).values()} == {"unchanged"}


def test_a_rollout_killed_after_submitting_is_picked_up_without_a_second_deploy(
    airflow_db: None, tmp_path: Path
) -> None:
    root, folder = CHECKPOINT_ROOT / f"crash-{uuid.uuid4().hex[:8]}", tmp_path / "desired"
    spec = fleet_job(root, "crashy")
    _write_folder(folder, {"crashy": spec})
    path = write_dag(
        "crash_rollout",
        f"""
        from airflow_async_stream.factories import rollout_dag

        rollout_dag({str(folder)!r}, dag_id="crash_rollout", startup_timeout_s=240, wait_timeout_s=120)
        """,
    )
    control = _control(spec)
    run = subprocess.Popen(
        [str(Path(sys.executable).parent / "airflow"), "dags", "test", "crash_rollout"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    # spark-submit has been launched
    until(lambda: (control.read_json("deployment.json") or {}).get("driver"), 300, what="the launch", alive=run)
    os.killpg(run.pid, signal.SIGKILL)  # the Airflow run dies; the driver, in its own session, lives on
    run.wait()
    submitted = _deployment_id(spec)
    assert control.read_json("rollout.json") is None, "the killed run got to record an outcome"

    fail_running_dag_runs("crash_rollout")
    rerun = run_dag(path, "crash_rollout")

    assert str(rerun.state) == "success", task_states(rerun)
    assert _deployment_id(spec) == submitted, "the re-run deployed the job a second time"
    record = control.read_json("rollout.json")
    assert (record["action"], record["outcome"]) in {("unchanged", "confirmed"), ("unchanged", "unchanged")}
    assert _running_spec(spec) == spec


def test_a_rollout_that_analyzes_stops_at_its_plan_on_a_spec_spark_refuses(
    airflow_db: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    root, folder = CHECKPOINT_ROOT / f"analyzed-{uuid.uuid4().hex[:8]}", tmp_path / "desired"
    specs = {
        "fine": fleet_job(root, "fine"),
        "misspelt": fleet_job(root, "misspelt", transform={"sql": "SELECT valeu FROM source"}),
    }
    _write_folder(folder, specs)
    path = write_dag(
        "analyzed",
        f"""
        from airflow_async_stream.factories import rollout_dag

        rollout_dag({str(folder)!r}, dag_id="analyzed_rollout", analyze=True, startup_timeout_s=240)
        """,
    )
    run = run_dag(path, "analyzed_rollout")
    output = "".join(capfd.readouterr())

    states = task_states(run)
    assert states["plan"] == "failed" and states.get("apply") in (None, "upstream_failed"), states
    assert "1 problem(s) found by analysis, so no job was changed" in output
    assert (
        "misspelt (misspelt.yaml): transform.sql: A column, variable, or function parameter with name `valeu`" in output
    )
    for spec in specs.values():  # neither job was deployed: not even the one whose spec is right
        assert _control(spec).read_deployment() is None
