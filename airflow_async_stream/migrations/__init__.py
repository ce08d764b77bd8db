"""Migrations: TaskGroups that change a running job's configuration safely."""

from airflow_async_stream.migrations.safe_disable import safe_disable_async_progress

__all__ = ["safe_disable_async_progress"]
