"""Migrations: TaskGroups that change a running job's configuration safely, and their Airflow-free steps.

The TaskGroup is imported on first use, so ``migrations.safe_disable_steps`` (used by rollouts) loads no
operator, sensor or TaskGroup module.
"""

from __future__ import annotations

from typing import Any

__all__ = ["safe_disable_async_progress"]


def __getattr__(name: str) -> Any:
    if name == "safe_disable_async_progress":
        from airflow_async_stream.migrations.safe_disable import safe_disable_async_progress

        return safe_disable_async_progress
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
