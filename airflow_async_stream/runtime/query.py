"""Build a job's streaming query from its spec, find stateful operators before Spark does, and stop it between
micro-batches."""

from __future__ import annotations

import contextlib
import importlib
import io
import time
from typing import TYPE_CHECKING

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.runtime.plan import PlanNode, analyzed_plan_section, parse_tree, stateful_operators_in
from airflow_async_stream.runtime.versions import progress_of
from airflow_async_stream.spec.model import JobSpec

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming.query import StreamingQuery
    from pyspark.sql.streaming.readwriter import DataStreamWriter

__all__ = [
    "analyzed_plan",
    "apply_spec_to_writer",
    "apply_transform",
    "build_dataframe",
    "read_source",
    "refuse_stateful_with_async",
    "stateful_operators",
]

#: Spark redacts option values whose names match this in plans and its UI (its default matches only `url`).
SQL_REDACTION_REGEX = "(?i)url|password|secret|token|jaas|sasl"


def build_dataframe(spark: SparkSession, spec: JobSpec, secret_options: dict[str, str] | None = None) -> DataFrame:
    """source -> optional transform, as a streaming DataFrame (``secret_options``: resolved from connections)."""
    return apply_transform(spark, spec, read_source(spark, spec, secret_options))


def read_source(spark: SparkSession, spec: JobSpec, secret_options: dict[str, str] | None = None) -> DataFrame:
    """The spec's source as a streaming DataFrame: Spark checks its format, options and schema here."""
    assert spec.source is not None  # guaranteed by the spec rules when no application is given
    options = {**spec.source.spark_options(), **(secret_options or {})}
    reader = spark.readStream.format(spec.source.format).options(**options)
    if spec.source.schema_ddl:
        reader = reader.schema(spec.source.schema_ddl)
    return reader.load()


def apply_transform(spark: SparkSession, spec: JobSpec, df: DataFrame) -> DataFrame:
    """The spec's transform over ``df`` (SQL over the view ``source``, or the entrypoint), or ``df`` itself."""
    if spec.transform is None:
        return df
    if spec.transform.sql is not None:
        df.createOrReplaceTempView("source")
        return spark.sql(spec.transform.sql)
    return _call_entrypoint(spec.transform.entrypoint or "", spark, df)


def _call_entrypoint(entrypoint: str, spark: SparkSession, df: DataFrame) -> DataFrame:
    module_name, func_name = entrypoint.split(":")
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise SpecError([("transform.entrypoint", f"cannot load {entrypoint!r}: {exc}")]) from exc
    result: DataFrame = func(spark, df)
    if not getattr(result, "isStreaming", False):
        raise SpecError(
            [("transform.entrypoint", f"{entrypoint} must return a streaming DataFrame, got {type(result).__name__}")]
        )
    return result


def analyzed_plan(df: DataFrame) -> PlanNode | None:
    """The query's analyzed logical plan as a tree (from ``explain``, which works for SQL over streaming views)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        df.explain(mode="extended")
    return parse_tree(analyzed_plan_section(out.getvalue()))


def stateful_operators(df: DataFrame) -> list[str]:
    """Names of stateful operators in the query's analyzed plan (empty for a stateless query)."""
    return stateful_operators_in(analyzed_plan(df))


def refuse_stateful_with_async(df: DataFrame, spec: JobSpec) -> None:
    """Refuse before ``start()`` what Spark would only refuse at the first batch."""
    if not spec.async_progress.enabled:
        return
    found = stateful_operators(df)
    if found:
        raise SpecError(
            [
                (
                    "async_progress.enabled",
                    "async progress tracking works only on stateless queries, and this query's plan has "
                    f"stateful operators: {', '.join(found)}",
                )
            ]
        )


def apply_spec_to_writer(
    writer: DataStreamWriter,
    spec: JobSpec,
    application_mode: bool,
    secret_options: dict[str, str] | None = None,
) -> DataStreamWriter:
    """Set what the spec owns: sink (unless the application chose it), checkpoint, trigger, async options.

    ``secret_options`` are the sink options resolved from Airflow connections; they never pass through a file.
    """
    if spec.sink is not None and not application_mode:
        writer = writer.format(spec.sink.format)
        if spec.sink.output_mode:
            writer = writer.outputMode(spec.sink.output_mode)
    writer = writer.queryName(spec.name.replace("-", "_"))
    writer = writer.options(**spec.writer_options())
    if secret_options:
        writer = writer.options(**secret_options)
    if not spec.async_progress.enabled:
        # An application may have set it on its own writer; the spec decides.
        writer = writer.option("asyncProgressTrackingEnabled", "false")
    trigger = spec.trigger.spark_kwargs()
    if trigger:
        writer = writer.trigger(**trigger)
    return writer


_UNSEEN = object()


def stop_between_batches(query: StreamingQuery, timeout_s: float, poll_s: float = 0.01) -> bool:
    """Stop when no trigger is active, or as soon as the batch in flight ends; stop anyway after ``timeout_s``
    (True: forced, a batch cut short).

    A query whose batches take longer than its trigger runs them back to back: Spark starts the next the moment
    one ends, so no poll sees it idle (a stop waited a random 8 to 60 s for a 1.5 s batch, then was forced).
    Stopped when the newest progress names a later batch, the next batch has only just begun: its offsets are
    planned again at the restart, as Spark does for any batch a stop ends.
    """
    deadline = time.monotonic() + timeout_s
    in_flight: object = _UNSEEN  # the newest ended batch when a trigger was first seen active
    forced = False
    while query.isActive and query.status.get("isTriggerActive"):
        newest = _newest_batch(query)
        if in_flight is _UNSEEN:
            in_flight = newest
        elif newest != in_flight:
            break
        if time.monotonic() > deadline:
            forced = True
            break
        time.sleep(poll_s)
    query.stop()
    return forced


def _newest_batch(query: StreamingQuery) -> int | None:
    """The id of the newest batch that ended (None before the first)."""
    last = progress_of(query.lastProgress)
    return None if last is None else int(last.batchId)
