"""The public documents the advice and the cures follow, by the titles a user looks them up by (the project's
own notes call them seeds 001-004; a user cannot look those up)."""

from __future__ import annotations

__all__ = ["SOURCES"]

#: The public documents the advice follows, by the titles a user looks them up by.
SOURCES = {
    "databricks": 'Databricks docs, "What is asynchronous progress tracking?"',
    "spark": 'Apache Spark, "Structured Streaming Programming Guide"',
    "state": 'Databricks blog, "Speed Up Streaming Queries With Asynchronous State Checkpointing"',
    "subsecond": 'Databricks blog, "Latency goes subsecond in Apache Spark Structured Streaming"',
}
