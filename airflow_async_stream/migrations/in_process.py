"""The whole safe-disable migration in one process (a rollout's step, a script): every step in order, and the
rollback to async at interval 0 when one fails."""

from __future__ import annotations

from airflow_async_stream.migrations.outcome import (
    Stage,
)
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.records import (
    ACTIVE_STATES,
    Status,
)

__all__ = ["run_safe_disable"]


def run_safe_disable(migration: SafeDisable, status: Status | None) -> list[Stage]:
    """Every step in order, in this process; the stages made (the last one: to synchronous).

    ``status`` is the job's status record before the run: a job already stopped whose checkpoint is safe
    for a synchronous restart (a crashed run got past the gate) goes straight to the synchronous deploy.
    Raises on the first failing step; the caller rolls back.
    """
    stages: list[Stage] = []
    stopped = status is None or status.state not in ACTIVE_STATES
    if stopped and inspect_checkpoint(migration.checkpoint).sync_restart_safe:
        migration.log.info("%s: stopped and its checkpoint is safe for a synchronous restart", migration.spec.name)
    else:
        stages.append(migration.to_interval_0())
        migration.wait_for_batches(stages[-1], migration.async_batches)
        migration.stop_for_gate()
        migration.gate()
    stages.append(migration.to_synchronous())
    migration.wait_for_batches(stages[-1], 1)
    return stages
