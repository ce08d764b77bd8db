"""The two specs the safe-disable migration runs: async progress at interval 0 (every batch checkpointed: the
cure), and synchronous (the goal, with any further changes the user asked for)."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec

#: The spec changes of the async phase (every batch checkpointed) and of the synchronous target.
ASYNC_EVERY_BATCH: dict[str, Any] = {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}
SYNCHRONOUS: dict[str, Any] = {"async_progress": {"enabled": False}}

__all__ = ["ASYNC_EVERY_BATCH", "SYNCHRONOUS", "at_interval_0", "synchronous"]


def at_interval_0(spec: JobSpec | dict[str, Any]) -> JobSpec:
    """The spec with async progress tracking on and every batch checkpointed."""
    return parse_spec(deep_merge(_mapping(spec), ASYNC_EVERY_BATCH))


def synchronous(spec: JobSpec | dict[str, Any], overrides: dict[str, Any] | None = None) -> JobSpec:
    """The spec with async progress tracking off, and ``overrides`` (e.g. new ``spark_conf``) applied; never
    real-time mode (the migration's steps run micro-batches; a deploy moves the job on afterwards)."""
    if ((overrides or {}).get("trigger") or {}).get("real_time"):
        raise SpecError(
            [
                (
                    "sync_overrides.trigger.real_time",
                    "the migration ends in synchronous micro-batches; "
                    "move the job to real-time mode afterwards, by a deploy (a restart) with that trigger",
                )
            ]
        )
    return parse_spec(deep_merge(_mapping(spec), deep_merge(SYNCHRONOUS, overrides or {})))


def _mapping(spec: JobSpec | dict[str, Any]) -> dict[str, Any]:
    return spec.to_mapping() if isinstance(spec, JobSpec) else dict(spec)
