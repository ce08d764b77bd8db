"""The safe-disable steps without Spark: the specs each step deploys, what is refused at DAG parse, and that
the TaskGroup's tasks deploy exactly what the steps (and so a rollout) deploy."""

from __future__ import annotations

from typing import Any

import pendulum
import pytest
from airflow.sdk import DAG

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.factories import safe_disable_async_progress
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.migrations.specs import at_interval_0, synchronous
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop

SPEC: dict[str, Any] = rate_noop(
    "steps",
    "/tmp/steps-ck",
    trigger={"processing_time": "1 second"},
    async_progress={"enabled": True, "checkpoint_interval_ms": 5000},
)


def _group(**kwargs: Any) -> dict[str, Any]:
    with DAG("steps_dag", schedule=None, start_date=pendulum.datetime(2026, 1, 1)) as dag:
        safe_disable_async_progress(SPEC, **kwargs)
    return dag.task_dict


def test_each_step_deploys_the_spec_it_names() -> None:
    job = parse_spec(SPEC)
    assert at_interval_0(job).async_progress.in_effect() == {"enabled": True, "checkpoint_interval_ms": 0}
    sync = synchronous(job, {"spark_conf": {"spark.sql.shuffle.partitions": "4"}})
    assert sync.async_progress.enabled is False
    assert sync.spark_conf == {"spark.sql.shuffle.partitions": "4"}
    assert (sync.name, sync.checkpoint, sync.trigger) == (job.name, job.checkpoint, job.trigger)


def test_the_taskgroup_runs_the_steps_of_the_same_migration() -> None:
    overrides = {"spark_conf": {"spark.sql.shuffle.partitions": "4"}}
    migration = SafeDisable(parse_spec(SPEC), sync_overrides=overrides)
    for in_place in (True, False):
        tasks = _group(sync_overrides=overrides, in_place=in_place)
        steps = {
            task_id.removeprefix("safe_disable."): (task.step, task.migration(None))
            for task_id, task in tasks.items()
            if hasattr(task, "step")
        }
        assert {k: step for k, (step, _) in steps.items()} == {
            "to_interval_0": "to_interval_0",
            "stop_async": "stop_for_gate",
            "gate_sync_restart_safe": "gate",
            "to_synchronous": "to_synchronous",
            "rollback_to_async": "to_interval_0",
        }
        for _, built in steps.values():
            assert built.in_place is in_place
            assert at_interval_0(built.spec) == at_interval_0(migration.spec)
            assert built.synchronous_spec() == migration.synchronous_spec()
        assert tasks["safe_disable.hold_job"].ttl_s == migration.hold_ttl_s


def test_a_deferred_wait_is_retried_once_and_the_steps_never() -> None:
    """A resumed deferred sensor can be failed by Airflow's stale report of its deferral (apache/airflow#72716):
    the waits get one retry when they defer; a step that changes the job is never run twice by a retry."""
    waits = ("safe_disable.wait_async_batches", "safe_disable.wait_sync_batch")
    deferred = _group(deferrable=True)
    assert {(deferred[w].retries, deferred[w].retry_delay.total_seconds()) for w in waits} == {(1, 5.0)}
    assert all(not task.retries for task_id, task in deferred.items() if task_id not in waits)
    assert {_group(deferrable=False)[w].retries for w in waits} == {0}


def test_fewer_than_two_async_batches_or_a_bad_sync_target_fail_at_dag_parse() -> None:
    with pytest.raises(ValueError, match="async_batches must be at least 2"):
        _group(async_batches=1)
    with pytest.raises(SpecError, match="trigger"):
        _group(sync_overrides={"trigger": {"once": True}})  # two trigger kinds
    with pytest.raises(SpecError, match=r"sync_overrides\.trigger\.real_time: .*afterwards, by a deploy"):
        _group(sync_overrides={"trigger": {"processing_time": None, "real_time": "5 seconds"}})


def test_a_wait_ended_by_a_forced_stop_says_who_stopped_the_job(tmp_path: Any) -> None:
    """The job stopped under a migration's wait: a forced stop that ended the migration's hold is named."""
    from airflow_async_stream.exceptions import CommittedBatchesError, HoldRevokedError
    from airflow_async_stream.migrations.outcome import Stage
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Holder, revoke, take
    from airflow_async_stream.state.records import State, Status, now

    holder = Holder("DAG run safe_disable/run-1", "safe-disable")
    migration = SafeDisable(parse_spec({**SPEC, "checkpoint": str(tmp_path / "ck")}), holder, wait_timeout_s=5)
    control = migration.control
    control.ensure()
    control.write_status(Status(deployment_id="d1", state=State.STOPPED, heartbeat_at=now()))
    after = Stage("async_interval_0", "restart", "test", "d1", None)

    with pytest.raises(CommittedBatchesError, match="the job stopped") as plain:
        migration.wait_for_batches(after, 2)
    assert not isinstance(plain.value, HoldRevokedError)
    take(control, holder, 600)
    revoke(control, Holder("process 7 on h", "stop --force"), "stop --force from the command line")
    with pytest.raises(HoldRevokedError, match="ended by process 7 on h"):
        migration.wait_for_batches(after, 2)
    assert ControlArea.for_checkpoint(migration.checkpoint).read_status().state == State.STOPPED
