"""Migrations: the Airflow-free steps that change a running job's configuration safely.

The safe-disable steps are plain functions; the TaskGroup that runs them is in ``factories``.
"""

from __future__ import annotations

from typing import Any

from airflow_async_stream._moved import renamed

__all__: list[str] = []


def __getattr__(name: str) -> Any:
    return renamed(__name__, name)  # moved to the factories package: _moved.NAMES
