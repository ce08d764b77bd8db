"""Airflow 3 provider that deploys and governs PySpark Structured Streaming jobs with async progress tracking."""

from __future__ import annotations

from typing import Any

from airflow_async_stream import _moved

_moved.install()  # the previous release's module paths keep working, with a warning

__version__ = "0.1.0"

__all__ = ["__version__", "get_provider_info"]


def get_provider_info() -> dict[str, Any]:
    """What Airflow's providers manager reads through the ``apache_airflow_provider`` entry point."""
    return {
        "package-name": "airflow-async-stream",
        "name": "Async Stream (Spark Structured Streaming with async progress tracking)",
        "description": "Deploy and govern PySpark Structured Streaming jobs; turn async progress tracking off safely.",
        "versions": [__version__],
        "hooks": [
            {
                "integration-name": "Spark Structured Streaming",
                "python-modules": ["airflow_async_stream.hooks.spark_stream"],
            }
        ],
        "operators": [
            {
                "integration-name": "Spark Structured Streaming",
                "python-modules": [
                    "airflow_async_stream.operators.deploy",
                    "airflow_async_stream.operators.stop",
                    "airflow_async_stream.operators.gate",
                    "airflow_async_stream.operators.hold",
                    "airflow_async_stream.operators.safe_disable",
                ],
            }
        ],
        "sensors": [
            {
                "integration-name": "Spark Structured Streaming",
                "python-modules": ["airflow_async_stream.sensors.committed_batches"],
            }
        ],
        "triggers": [
            {
                "integration-name": "Spark Structured Streaming",
                "python-modules": ["airflow_async_stream.triggers.committed_batches"],
            }
        ],
        # Jobs use the apache-spark provider's `spark` connection type; registering it twice would clash.
        "connection-types": [],
        "integrations": [
            {
                "integration-name": "Spark Structured Streaming",
                "external-doc-url": "https://spark.apache.org/docs/latest/streaming/",
                "tags": ["apache"],
            }
        ],
    }
