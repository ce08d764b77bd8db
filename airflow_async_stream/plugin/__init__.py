"""The Airflow UI face: the streaming-jobs pages, a FastAPI app on the api-server at ``/async-stream``, and
their entry in Airflow's navigation. Registered through the ``airflow.plugins`` entry point.

Every Airflow process loads plugins (scheduler, workers, each task), but only the api-server reads
``fastapi_apps``: the app, and FastAPI and Airflow's security module with it, is built on that first read.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from airflow.plugins_manager import AirflowPlugin

__all__ = ["PREFIX", "AsyncStreamPlugin"]

#: Where the app is mounted on the api-server.
PREFIX = "/async-stream"


@cache
def _apps() -> list[dict[str, Any]]:
    from airflow_async_stream.plugin.app import create_app

    return [{"name": "Streaming jobs", "app": create_app(), "url_prefix": PREFIX}]


class _BuiltOnRead:
    """A class attribute whose value is built the first time it is read."""

    def __get__(self, instance: object, owner: type) -> list[dict[str, Any]]:
        return _apps()


class AsyncStreamPlugin(AirflowPlugin):
    """The streaming-jobs pages (read-only: changes go through DAGs)."""

    name = "async_stream"
    fastapi_apps = _BuiltOnRead()
    external_views = [
        {
            "name": "Streaming jobs",
            "href": f"{PREFIX}/",
            "destination": "nav",
            "category": "browse",
            "url_route": "async-stream",
        }
    ]
