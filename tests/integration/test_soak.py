"""A bounded soak: one job through 20 consecutive configuration changes, nothing lost.

Changes of the trigger, a runtime Spark conf, the async interval or async turned on go alternately through a
redeploy and through an in-place switch of the running driver; every change that turns async progress
tracking off goes through the safe-disable migration, alternately switched in place and by restarts.
Afterwards the progress log must show contiguous source offsets from the first batch to the last, and as
many drivers and queries as the paths taken say.
"""

from __future__ import annotations

import pytest

from airflow_async_stream.insight.batches import continuity_problems
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.integration.helpers import run_dag, task_states, write_dag

pytestmark = pytest.mark.integration

# (kind, overrides): 20 changes: 8 redeploys, 7 in-place switches, 5 safe-disable migrations (3 in place).
CHANGES = [
    ("restart", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 1000}}),
    ("switch", {"trigger": {"processing_time": "200 milliseconds"}}),
    ("safe_disable_in_place", {}),
    ("restart", {"spark_conf": {"spark.sql.shuffle.partitions": "4"}}),
    ("switch", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 2000}}),
    ("restart", {"trigger": {"processing_time": "300 milliseconds"}}),
    ("safe_disable_by_restarts", {}),
    ("switch", {"trigger": {"processing_time": "150 milliseconds"}}),
    ("restart", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}),
    ("switch", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 1500}}),
    ("safe_disable_in_place", {}),
    ("restart", {"spark_conf": {"spark.sql.shuffle.partitions": "2"}}),
    ("switch", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 3000}}),
    ("restart", {"trigger": {"processing_time": "250 milliseconds"}}),
    ("safe_disable_by_restarts", {}),
    ("switch", {"trigger": {"processing_time": "100 milliseconds"}}),
    ("restart", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 500}}),
    ("switch", {"spark_conf": {"spark.sql.shuffle.partitions": "3"}}),
    ("restart", {"async_progress": {"enabled": True, "checkpoint_interval_ms": 2500}}),
    ("safe_disable_in_place", {}),
]
KINDS = [kind for kind, _ in CHANGES]


def test_twenty_configuration_changes_lose_nothing(airflow_db: None, checkpoint_dir: str) -> None:
    base = rate_noop(
        "soak-job",
        checkpoint_dir,
        rows=300,
        trigger={"processing_time": "100 milliseconds"},
        async_progress={"enabled": False},
    )
    path = write_dag(
        "soak_twenty_changes",
        f"""
        from airflow.sdk import dag, chain, task
        from airflow_async_stream.factories import safe_disable_async_progress
        from airflow_async_stream.operators import DeployStreamingJobOperator
        from airflow_async_stream.sensors import CommittedBatchesSensor
        from airflow_async_stream.spec import deep_merge

        BASE = {base!r}
        CHANGES = {CHANGES!r}

        @task
        def switch(spec):
            from airflow_async_stream.state.control import ControlArea
            from airflow_async_stream.switch.request import switch_in_place
            from airflow_async_stream.spec import parse_spec

            record = switch_in_place(ControlArea.for_checkpoint(spec["checkpoint"]), parse_spec(spec), timeout_s=120)
            assert record.outcome == "switched", record
            return {{"start_batch": record.committed_before}}

        @dag(schedule=None)
        def soak_twenty_changes():
            steps = [DeployStreamingJobOperator(task_id="first_deploy", spec=BASE)]
            spec = BASE
            for i, (kind, overrides) in enumerate(CHANGES):
                if kind.startswith("safe_disable"):
                    steps.append(safe_disable_async_progress(spec, group_id=f"change_{{i:02d}}_{{kind}}",
                                                             deferrable=False, in_place=kind.endswith("in_place")))
                    spec = deep_merge(spec, {{"async_progress": {{"enabled": False}}}})
                    continue
                spec = deep_merge(spec, overrides)
                if kind == "switch":
                    changed = switch.override(task_id=f"change_{{i:02d}}_switch")(spec)
                else:
                    changed = DeployStreamingJobOperator(task_id=f"change_{{i:02d}}_restart", spec=spec, redeploy=True).output
                steps += [changed, CommittedBatchesSensor(task_id=f"change_{{i:02d}}_committed", checkpoint=spec["checkpoint"],
                                                         min_batches=2, baseline_batch=changed, deferrable=False)]
            chain(*steps)

        soak_twenty_changes()
        """,
    )
    dag_run = run_dag(path, "soak_twenty_changes")

    states = task_states(dag_run)
    failed = {task: state for task, state in states.items() if state not in ("success", "skipped")}
    assert not failed, failed
    assert sum(1 for t in states if t.endswith("rollback_to_async") and states[t] == "skipped") == 5
    control = ControlArea.for_checkpoint(checkpoint_dir)
    progress = control.read_progress()
    deployments = {e["deployment_id"] for e in progress}
    queries = {e["query_run_id"] for e in progress}
    # A new driver at the first deploy, each redeploy and twice per migration by restarts; a new query (the
    # same driver) at each in-place switch and twice per migration in place.
    drivers = 1 + KINDS.count("restart") + 2 * KINDS.count("safe_disable_by_restarts")
    assert len(deployments) == drivers
    assert len(queries) == drivers + KINDS.count("switch") + 2 * KINDS.count("safe_disable_in_place")
    assert continuity_problems(progress) == []
    batch_ids = sorted({e["batch_id"] for e in progress})
    assert batch_ids == list(range(batch_ids[0], batch_ids[-1] + 1))
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe
    print(
        f"soak: {len(deployments)} deployments, {len(queries)} queries, batches {batch_ids[0]}..{batch_ids[-1]} checked contiguous"
    )
