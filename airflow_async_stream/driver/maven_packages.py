"""Maven packages a job needs at spark-submit: the Kafka connector matching the target's Spark and Scala.

The versions default to the pyspark installed here (read without importing it); a cluster running another
Spark names its own in the Spark connection's extra (``spark_version``, ``scala_version``), or gives the
package outright (``kafka_package``; an empty value when the cluster already has the jar).
"""

from __future__ import annotations

import re
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from airflow_async_stream.spec.model import JobSpec

__all__ = ["installed_spark_versions", "kafka_package", "packages_conf"]

_SCALA_RE = re.compile(r"^spark-core_(\d+\.\d+)-")


def installed_spark_versions() -> tuple[str, str]:
    """(Spark version, Scala binary version) of the installed pyspark distribution."""
    spark = metadata.version("pyspark")
    found = find_spec("pyspark")
    scala = "2.13"  # Spark 4 builds for Scala 2.13 only
    if found and found.submodule_search_locations:
        jars = Path(next(iter(found.submodule_search_locations))) / "jars"
        for jar in sorted(jars.glob("spark-core_*.jar")):
            match = _SCALA_RE.match(jar.name)
            if match:
                scala = match.group(1)
    return spark, scala


def kafka_package(spark_version: str, scala_version: str) -> str:
    return f"org.apache.spark:spark-sql-kafka-0-10_{scala_version}:{spark_version}"


def uses_kafka(spec: JobSpec) -> bool:
    return any(part is not None and part.format.lower() == "kafka" for part in (spec.source, spec.sink))


def packages_conf(spec: JobSpec, connection_extra: dict[str, Any]) -> dict[str, str]:
    """``spark.jars.packages`` for a Kafka job, unless the spec's spark_conf sets it already."""
    if not uses_kafka(spec) or "spark.jars.packages" in spec.spark_conf:
        return {}
    if "kafka_package" in connection_extra:
        package = str(connection_extra["kafka_package"] or "")
    else:
        spark, scala = installed_spark_versions()
        spark = str(connection_extra.get("spark_version") or spark)
        scala = str(connection_extra.get("scala_version") or scala)
        package = kafka_package(spark, scala)
    return {"spark.jars.packages": package} if package else {}
