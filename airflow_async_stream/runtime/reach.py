"""What this host's Spark can reach of a spec's source and sink, and an empty stand-in for a source it cannot.

A Kafka source without the connector, a connector only the cluster adds, a path on a cluster filesystem or
one that exists only on the cluster's hosts: none of these is wrong, so none fails analysis. Each is a line
saying what was not checked; the transform is still checked, over an empty streaming source with the same
columns (the Kafka source's fixed ones, or the spec's ``schema``). A format close to one Spark ships with is
a typo, and is refused.
"""

from __future__ import annotations

import difflib
import glob
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from airflow_async_stream.spec.endpoints import Source

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["KAFKA_COLUMNS", "Reach", "format_reach", "path_out_of_reach", "source_reach"]

#: The Kafka source's columns (Spark's KafkaRecordToRowConverter), and the one ``includeHeaders`` adds.
KAFKA_COLUMNS = (
    "key BINARY, value BINARY, topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP, timestampType INT"
)
KAFKA_HEADERS = ", headers ARRAY<STRUCT<key: STRING, value: BINARY>>"
#: The short names Spark ships with, per side: a near miss of one of these is a typo.
BUILT_IN = {
    "source": ("rate", "rate-micro-batch", "socket", "text", "csv", "json", "parquet", "orc", "kafka"),
    "sink": ("console", "noop", "memory", "foreach", "text", "csv", "json", "parquet", "orc", "kafka"),
}


@dataclass
class Reach:
    problems: list[tuple[str, str]] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    #: The columns of the stand-in source, when the real one is out of reach but its columns are known.
    standin_ddl: str | None = None

    def standin(self, session: SparkSession, empty_folder: str) -> DataFrame:
        """An empty streaming source with ``standin_ddl``'s columns (a file source over ``empty_folder``)."""
        if self.standin_ddl is None:
            raise ValueError("no stand-in columns are known for this source")
        return session.readStream.schema(self.standin_ddl).format("parquet").load(empty_folder)


def format_reach(session: SparkSession, side: str, fmt: str) -> Reach:
    """Whether Spark here knows ``fmt``; if not, a typo (refused) or a connector this host lacks (noted)."""
    jvm: Any = session._jvm
    try:
        jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(
            fmt, session._jsparkSession.sessionState().conf()
        )
        return Reach()
    except Exception:  # py4j's error for a class Spark could not find: the lookup's only refusal
        pass
    if fmt.lower() == "kafka":
        return Reach(
            not_checked=[f"{side}: this host's Spark has no Kafka connector, so its Kafka options were not checked"]
        )
    close = difflib.get_close_matches(fmt.lower(), BUILT_IN[side], n=1, cutoff=0.75)
    if close:
        reason = f"Spark has no data source {fmt!r}; did you mean {close[0]!r}? (Spark: DATA_SOURCE_NOT_FOUND)"
        return Reach(problems=[(f"{side}.format", reason)])
    return Reach(
        not_checked=[
            f"{side}: this host's Spark has no data source {fmt!r} (a connector the cluster adds?), so it was not checked"
        ]
    )


def path_out_of_reach(path: str) -> str | None:
    scheme = urlparse(path).scheme
    if scheme and scheme != "file" and len(scheme) > 1:  # one letter: a Windows drive
        return f"its path {path} is on a filesystem ({scheme}) this host does not read"
    local = urlparse(path).path if scheme == "file" else path
    there = glob.glob(local) if glob.has_magic(local) else Path(local).exists()
    return None if there else f"its path {path} does not exist on this host"


def source_reach(session: SparkSession, source: Source) -> Reach:
    """What of ``source`` is out of reach here, and the stand-in's columns when they are known."""
    reach = format_reach(session, "source", source.format)
    if reach.problems:
        return reach
    kafka = source.format.lower() == "kafka"
    if kafka and reach.not_checked:
        headers = str(source.options.get("includeHeaders", "")).lower() == "true"
        reach.standin_ddl = KAFKA_COLUMNS + (KAFKA_HEADERS if headers else "")
        reach.not_checked[0] += "; the transform was checked over an empty source with the Kafka source's columns"
        return reach
    path = next((str(v) for k, v in source.options.items() if k.lower() == "path"), None)
    if not reach.not_checked and path:
        why = path_out_of_reach(path)
        if why:
            reach.not_checked.append(f"source: {why}, so the source was not checked")
    if reach.not_checked:
        reach.standin_ddl = source.schema_ddl
        reach.not_checked[0] += (
            "; the transform was checked over an empty source with the spec's schema"
            if source.schema_ddl
            else "; with no `schema` to give its columns, the transform was not checked either"
        )
    return reach
