"""The whole safe-disable migration in one process (a rollout's step, a script): every step in order, and the
rollback to async at interval 0 when one fails."""

from __future__ import annotations

from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.migrations.outcome import Stage
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable

__all__ = ["run_safe_disable"]


def run_safe_disable(migration: SafeDisable) -> list[Stage]:
    """Every step in order, in this process; the stages made (the last one: to synchronous).

    A job the decision starts synchronously at once (no driver runs and its checkpoint is safe for it: a
    crashed run got past the gate) goes straight to the synchronous deploy. Raises on the first failing
    step; the caller rolls back.
    """
    stages: list[Stage] = []
    target = migration.synchronous_spec()
    decision = decide(observe(migration.control, migration.checkpoint), target.to_mapping())
    if decision.need is Need.SAFE_DISABLE:
        stages.append(migration.to_interval_0())
        migration.wait_for_batches(stages[-1], migration.async_batches)
        migration.stop_for_gate()
        migration.gate()
    else:
        migration.log.info(
            "%s: %s: a synchronous start, without the migration's first steps", migration.spec.name, decision.how_reason
        )
    stages.append(migration.to_synchronous())
    migration.wait_for_batches(stages[-1], 1)
    return stages
