"""Sensors over Spark's checkpoint and the job's control area."""

from airflow_async_stream.sensors.committed_batches import LATEST, CommittedBatchesSensor

__all__ = ["LATEST", "CommittedBatchesSensor"]
