"""Maven packages a job needs at spark-submit: the Kafka connector matching the target's Spark and Scala.

The versions are the target's (driver/spark_version.py: what its spark-submit says, or the connection's extra
``spark_version`` / ``scala_version``); a connection may give the package outright (``kafka_package``; an
empty value when the cluster already has the jar).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow_async_stream.spec.model import JobSpec

if TYPE_CHECKING:
    from airflow_async_stream.driver.spark_version import SparkBuild

__all__ = ["kafka_package", "packages_conf"]


def kafka_package(spark_version: str, scala_version: str) -> str:
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_version}:{spark_version}"


def uses_kafka(spec: JobSpec) -> bool:
    return any(part is not None and part.format.lower() == "kafka" for part in (spec.source, spec.sink))


def packages_conf(spec: JobSpec, connection_extra: dict[str, Any], spark: SparkBuild) -> dict[str, str]:
    """``spark.jars.packages`` for a Kafka job on ``spark``, unless the spec's spark_conf sets it already."""
    if not uses_kafka(spec) or "spark.jars.packages" in spec.spark_conf:
        return {}
    if "kafka_package" in connection_extra:
        package = str(connection_extra["kafka_package"] or "")
    else:
        package = kafka_package(spark.version, spark.scala)
    return {"spark.jars.packages": package} if package else {}
