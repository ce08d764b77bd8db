"""Waits for more committed batches than Spark keeps commit files of (``minBatchesToRetain``, 5 here so
purging happens within seconds): the sensor (poke and deferred) and the migration's waits finish."""

from __future__ import annotations

import pytest

from airflow_async_stream.state.checkpoint import batch_ids
from tests.helpers import rate_noop
from tests.integration.helpers import run_dag, task_states, write_job_dag, xcom

pytestmark = pytest.mark.integration

RETAINED = 5
WANTED = 3 * RETAINED


def test_sensors_and_the_migration_wait_for_three_times_more_batches_than_spark_retains(
    airflow_db: None, checkpoint_dir: str
) -> None:
    spec = rate_noop(
        "retained-job",
        checkpoint_dir,
        rows=100,
        trigger={"processing_time": "100 milliseconds"},
        # Interval 0 writes every batch's commit file, so the purge is what keeps the folder short.
        async_progress={"enabled": True, "checkpoint_interval_ms": 0},
        spark_conf={"spark.sql.streaming.minBatchesToRetain": RETAINED},
    )
    path = write_job_dag(
        "waits_past_retention",
        spec,
        f"""
        wait = dict(checkpoint=SPEC["checkpoint"], min_batches={WANTED}, poke_interval=0.5, wait_timeout_s=120)
        deploy = DeployStreamingJobOperator(task_id="deploy", spec=SPEC, startup_timeout_s=180)
        poke = CommittedBatchesSensor(task_id="poke", baseline_batch=deploy.output, deferrable=False, **wait)
        deferred = CommittedBatchesSensor(task_id="deferred", baseline_batch="latest", deferrable=True, **wait)
        migration = safe_disable_async_progress(SPEC, async_batches={WANTED}, wait_timeout_s=120,
                                                startup_timeout_s=180, deferrable=True)
        deploy >> poke >> deferred >> migration
        """,
    )

    run = run_dag(path, "waits_past_retention")

    states = task_states(run)
    assert {k: v for k, v in states.items() if v != "success"} == {"safe_disable.rollback_to_async": "skipped"}
    for task in ("poke", "deferred", "safe_disable.wait_async_batches"):
        waited = xcom(run, task)
        assert waited["committed_after"] >= WANTED, (task, waited)
    # Spark really purged: the commit log never held as many files as one wait counted.
    kept = batch_ids(checkpoint_dir, "commits")
    assert len(kept) < WANTED, kept
    assert kept[-1] >= 3 * WANTED, kept  # three waits of WANTED batches each, one after the other
