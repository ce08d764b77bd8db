"""Airflow 3 provider that deploys and governs PySpark Structured Streaming jobs with async progress tracking."""

from __future__ import annotations

from typing import Any

__version__ = "0.1.0"

__all__ = ["__version__", "get_provider_info"]


#: The provider's config section: `airflow config list` shows it; the streaming-jobs pages (plugin/) read it at
#: every request.
CONFIG: dict[str, Any] = {
    "async_stream": {
        "description": "Where the streaming-jobs pages on the api-server find jobs (name storage the "
        "api-server host reads: the same paths or URLs the workers use, never a host-local registry), and "
        "the running jobs' OpenLineage events, and which environment variables spec files may read.",
        "options": {
            "fleet_indexes": {
                "description": "Fleet indexes (the `index:` of a desired folder's _fleet.yaml), "
                "comma-separated: every job a rollout deployed, active or retired.",
                "version_added": "0.1.0",
                "type": "string",
                "example": "s3://bucket/streaming/fleet-index,/data/fleet-index",
                "default": "",
            },
            "checkpoint_folders": {
                "description": "Folders whose direct sub-folders are checkpoints, comma-separated: "
                "each one with a control area beside it (<checkpoint>.async-stream) is a job.",
                "version_added": "0.1.0",
                "type": "string",
                "example": "/data/ck,s3://bucket/streaming/ck",
                "default": "",
            },
            "spec_variables": {
                "description": "The environment variables a spec file's ${NAME} may read, comma-separated: "
                "names, and prefixes ending in * (a spec is written by whoever can change the desired folder; the "
                "worker's environment holds its own credentials). Any other is an error naming it; empty: none.",
                "version_added": "0.1.0",
                "type": "string",
                "example": "ASYNC_STREAM_*,CHECKPOINT_ROOT",
                "default": "ASYNC_STREAM_*",
            },
            "lineage_running_every_minutes": {
                "description": "How often a running driver emits an OpenLineage RUNNING event (batches, rows "
                "and latency since the last one), for jobs whose spec does not set lineage.running_every_minutes; "
                "empty or 0: never. Read at deploy; the events go through Airflow's [openlineage] transport.",
                "version_added": "0.1.0",
                "type": "string",
                "example": "5",
                "default": "",
            },
        },
    }
}


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
                    "airflow_async_stream.operators.supervise",
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
                "python-modules": [
                    "airflow_async_stream.triggers.committed_batches",
                    "airflow_async_stream.triggers.health",
                ],
            }
        ],
        "config": CONFIG,
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
