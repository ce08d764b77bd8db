"""The health watcher as the triggerer runs it: its event stream over a checkpoint folder (records written by
hand, no Spark), its serialized form, and the supervisor DAG it is the asset watcher of."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.factories import supervise_dag
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.triggers.health import FleetHealthTrigger
from tests.helpers import rate_noop


def _job(folder: Path, name: str, state: str) -> ControlArea:
    spec = rate_noop(name, str(folder / name))
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": f"{name}-1", "deployed_at": time.time() - 60})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": f"{name}-1",
            "state": state,
            "batches": 3,
            "error": "boom",
            "finished_at": time.time() - 1,
            "heartbeat_at": time.time() - 1,
        },
    )
    return control


async def _events(trigger: FleetHealthTrigger, within_s: float) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []

    async def collect() -> None:
        async for event in trigger.run():
            found.append(event.payload)

    try:
        await asyncio.wait_for(collect(), within_s)
    except TimeoutError:
        pass
    return found


def test_the_watcher_emits_each_change_once_over_many_polls(tmp_path: Path) -> None:
    _job(tmp_path, "down", "failed")
    _job(tmp_path, "ended", "stopped")
    trigger = FleetHealthTrigger(fleet_indexes=[], checkpoint_folders=[str(tmp_path)], poll_s=0.05)
    events = asyncio.run(_events(trigger, 1.0))  # about 20 polls
    assert [(e["job"], e["event"], e["deployment_id"]) for e in events] == [("down", "crashed", "down-1")]
    assert events[0]["control_area"] == f"{tmp_path}/down.async-stream"
    # A new watcher (the triggerer restarted) says nothing it said before.
    assert asyncio.run(_events(FleetHealthTrigger(**trigger.serialize()[1]), 0.5)) == []


def test_the_watcher_serializes_and_shares_one_sweep_per_fleet(tmp_path: Path) -> None:
    trigger = FleetHealthTrigger(fleet_indexes=["s3://b/index"], checkpoint_folders=[str(tmp_path)], poll_s=2)
    path, kwargs = trigger.serialize()
    assert path == "airflow_async_stream.triggers.health.FleetHealthTrigger"
    assert json.loads(json.dumps(kwargs)) == kwargs
    assert FleetHealthTrigger(**kwargs).shared_stream_key() == trigger.shared_stream_key()


def test_the_supervisor_dag_watches_the_fleet_and_refuses_nothing_to_watch(tmp_path: Path) -> None:
    alert, recovery = (lambda context: None), (lambda context: None)
    dag = supervise_dag(checkpoint_folders=[str(tmp_path)], dag_id="sup", on_alert=alert, on_recovery=recovery)
    [asset] = (
        dag.timetable.asset_condition.objects
        if hasattr(dag.timetable.asset_condition, "objects")
        else [dag.timetable.asset_condition]
    )
    [watcher] = asset.watchers
    assert watcher.trigger.checkpoint_folders == [str(tmp_path)]
    assert dag.max_active_runs == 1 and [t.task_id for t in dag.tasks] == ["supervise", "recovered", "done"]
    supervise, recovered, done = dag.tasks
    assert (
        done.upstream_task_ids == {"supervise"} and done.trigger_rule == "all_success"
    )  # a failed supervise fails the run
    assert supervise.on_failure_callback == [alert] and recovered.on_success_callback == [recovery]
    assert recovered.trigger_rule == "all_done" and recovered.upstream_task_ids == {"supervise"}
    with pytest.raises(ValueError, match="give a desired-state folder or fleet index, or checkpoint_folders"):
        supervise_dag()
