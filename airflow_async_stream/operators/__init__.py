"""Operators: deploy and stop streaming jobs."""

from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
from airflow_async_stream.operators.stop import StopStreamingJobOperator

__all__ = ["DeployStreamingJobOperator", "StopStreamingJobOperator"]
