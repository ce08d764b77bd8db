"""Operators: deploy and stop streaming jobs, and gate on the checkpoint."""

from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.gate import SyncRestartGateOperator
from airflow_async_stream.operators.stop import StopStreamingJobOperator

__all__ = ["DeployStreamingJobOperator", "StopStreamingJobOperator", "SyncRestartGateOperator"]
