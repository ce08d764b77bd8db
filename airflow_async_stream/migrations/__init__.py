"""Migrations: the Airflow-free steps that change a running job's configuration safely.

The safe-disable steps are plain functions; the TaskGroup that runs them is in ``factories``.
"""

from __future__ import annotations

__all__: list[str] = []
