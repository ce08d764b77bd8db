"""DAG and TaskGroup factories: the rollout, toggle-off, supervisor and tuner DAGs, the safe-disable TaskGroup.

Each factory is imported on first use, so a DAG file pays only for the one it calls.
"""

from __future__ import annotations

from typing import Any

__all__ = ["autotune_dag", "rollout_dag", "safe_disable_async_progress", "supervise_dag", "toggle_off_dag"]

_HOME = {
    "autotune_dag": "airflow_async_stream.factories.autotune",
    "rollout_dag": "airflow_async_stream.factories.rollout",
    "toggle_off_dag": "airflow_async_stream.factories.rollout",
    "safe_disable_async_progress": "airflow_async_stream.factories.safe_disable",
    "supervise_dag": "airflow_async_stream.factories.supervise",
}


def __getattr__(name: str) -> Any:
    if name in _HOME:
        import importlib

        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
