"""The checks a query meets when it is built and started, each refusal a problem on the spec field it is about:
the spec's SQL settings, a file source's streaming options, the output mode and continuous processing, and
real-time mode's operators. ``validate --analyze`` (analyze.py) runs them on a query it never starts.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.runtime.plan import real_time_refused_in
from airflow_async_stream.runtime.query import analyzed_plan
from airflow_async_stream.runtime.spark_errors import error_class, spark_reason
from airflow_async_stream.runtime.versions import file_stream_options_class
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.realtime import ALLOWLIST_CONF

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = [
    "FILE_SOURCES",
    "Findings",
    "apply_conf",
    "attempt",
    "check_file_options",
    "check_output_mode",
    "check_real_time",
    "source_field",
]

#: The file sources (Spark's ``FileFormat`` short names): their streaming options are read by ``FileStreamOptions``.
FILE_SOURCES = frozenset({"text", "csv", "json", "parquet", "orc"})
_OPTION_NAMED = re.compile(r"option\W{0,2}[\"'`]([A-Za-z][\w.]*)[\"'`]")


@dataclass
class Findings:
    """What Spark said of one spec: problems (field, reason), and what this host could not check."""

    problems: list[tuple[str, str]] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)


def attempt(verdict: Findings, field_of: Any, step: Any) -> Any:
    """Run ``step``; a refusal becomes a problem on the field ``field_of(exc)`` names."""
    try:
        result = step()
    except SpecError as exc:
        verdict.problems += exc.problems
        return None
    except Exception as exc:  # Spark's refusals arrive as many types; each becomes its field's line
        verdict.problems.append((field_of(exc), spark_reason(exc)))
        return None
    return True if result is None else result


def apply_conf(session: SparkSession, spec: JobSpec, verdict: Findings) -> None:
    """The spec's SQL settings, in its own session: Spark checks each value's type as it is set."""
    for key, value in spec.spark_conf_strings().items():
        if key.startswith("spark.sql.") and session.conf.isModifiable(key):
            attempt(verdict, lambda exc, key=key: f"spark_conf.{key}", lambda k=key, v=value: session.conf.set(k, v))


def check_file_options(session: SparkSession, spec: JobSpec, verdict: Findings) -> None:
    """A file source's options as Spark reads them when the query starts (``FileStreamOptions``): checked
    whether or not its path is in reach here, since they are the spec's alone."""
    assert spec.source is not None
    if spec.source.format.lower() not in FILE_SOURCES:
        return
    jvm: Any = session._jvm
    options = jvm.java.util.HashMap()
    for key, value in spec.source.spark_options().items():
        options.put(key, value)
    scala_options = jvm.org.apache.spark.api.python.PythonUtils.toScalaMap(options)
    read = functools.reduce(getattr, file_stream_options_class(session.version).split("."), jvm)
    attempt(verdict, lambda exc: source_field(spec, exc), lambda: read(scala_options))


def source_field(spec: JobSpec, exc: BaseException) -> str:
    """Which part of ``source`` Spark refused: its schema, format, path, a named option, or the source."""
    assert spec.source is not None
    condition = error_class(exc) or ""
    if type(exc).__name__ == "ParseException":
        return "source.schema"
    if condition == "DATA_SOURCE_NOT_FOUND":
        return "source.format"
    if condition == "PATH_NOT_FOUND":
        return "source.options.path"
    said = spark_reason(exc)
    named = [key for key in spec.source.options if any(f"{q}{key.lower()}{q}" in said.lower() for q in "'`\"")]
    named += [key for key, value in spec.source.spark_options().items() if len(value) > 1 and value in said]
    if named:
        return f"source.options.{named[0]}"
    missing = _OPTION_NAMED.search(said)  # an option the spec lacks: `Set a port ... with option("port", ...)`
    return f"source.options.{missing[1]}" if missing else "source"


def check_output_mode(session: SparkSession, df: DataFrame, spec: JobSpec, verdict: Findings) -> None:
    """Spark's checks of a streaming plan against its output mode (and continuous processing), as at ``start()``."""
    mode = (spec.sink.output_mode if spec.sink else None) or "append"
    jvm: Any = session._jvm
    checker = jvm.org.apache.spark.sql.catalyst.analysis.UnsupportedOperationChecker
    output_mode = jvm.org.apache.spark.sql.catalyst.streaming.InternalOutputModes.apply(mode)
    plan = df._jdf.queryExecution().analyzed()
    transform = "transform.sql" if spec.transform and spec.transform.sql else "transform"

    def field_of(exc: BaseException) -> str:
        said = (error_class(exc) or "") + spark_reason(exc)
        return (
            "sink.output_mode"
            if said.startswith(("STREAMING_OUTPUT_MODE", "Invalid streaming output mode"))
            else transform
        )

    if attempt(verdict, field_of, lambda: checker.checkForStreaming(plan, output_mode)) is None:
        return
    if spec.trigger.kind == "continuous":
        attempt(verdict, lambda exc: "trigger.continuous", lambda: checker.checkForContinuous(plan, output_mode))


def check_real_time(df: DataFrame, spec: JobSpec, verdict: Findings) -> None:
    """Operators real-time mode refuses, seen in the plan (an entrypoint's or application's too, which the
    spec rules cannot read), unless the spec turns Spark's allow-list check off."""
    if spec.spark_conf_strings().get(ALLOWLIST_CONF, "true").strip().lower() == "false":
        return
    refused = real_time_refused_in(analyzed_plan(df))
    if refused:
        verdict.problems.append(
            (
                "trigger.real_time",
                "real-time mode runs only the operators on Spark's allow-list (no aggregation, sort, shuffle, "
                f"window or limit), and this query's plan has: {', '.join(refused)}",
            )
        )
