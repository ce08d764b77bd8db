"""Spark's real-time mode (``trigger: {real_time: "5 seconds"}``, Spark 4.1+): what the pinned Spark refuses,
refused at DAG parse, before submit and in the driver, each reason naming the Spark error it saves the job from.

Read from PySpark 4.2.0's jars (SPARK_FACTS.md): ``StreamingQueryManager`` refuses a batch duration below
``spark.sql.streaming.realTimeMode.minBatchDuration`` (5000 ms) and async progress tracking;
``UnsupportedOperationChecker`` every output mode but update; ``RealTimeModeAllowlist`` sinks other than Kafka
and the console (noop and memory included) and physical operators outside its list (no aggregation, sort,
shuffle, window or limit: projections, filters, unions, generators and broadcast joins pass), both unless
``spark.sql.streaming.realTimeMode.allowlistCheck`` is false; ``MicroBatchExecution`` a source without
real-time reads (only Kafka has them) at the first batch.
"""

from __future__ import annotations

import re

from airflow_async_stream.spec.intervals import time_string_ms
from airflow_async_stream.spec.whole import WholeSpec

__all__ = [
    "MIN_BATCH_CONF",
    "REAL_TIME_RULES_READ_FROM",
    "REAL_TIME_SINKS",
    "REAL_TIME_SOURCES",
    "real_time_violations",
]

#: The PySpark release these rules were read from; a test fails when the runtime carries another.
REAL_TIME_RULES_READ_FROM = "4.2.0"
REAL_TIME_SOURCES = frozenset({"kafka"})
REAL_TIME_SINKS = frozenset({"kafka", "console"})
MIN_BATCH_CONF = "spark.sql.streaming.realTimeMode.minBatchDuration"
ALLOWLIST_CONF = "spark.sql.streaming.realTimeMode.allowlistCheck"
_MIN_BATCH_DEFAULT_MS = 5000
_SPARK = f"Spark {REAL_TIME_RULES_READ_FROM}"

#: SQL that always plans an operator outside the allow-list, whatever the tables (keyword -> operator).
_REFUSED_SQL = {
    r"\bgroup\s+by\b": "GROUP BY (aggregation)",
    r"\bdistinct\b": "DISTINCT (aggregation)",
    r"\b(?:order|sort)\s+by\b": "ORDER/SORT BY (sort)",
    r"\b(?:cluster|distribute)\s+by\b": "CLUSTER/DISTRIBUTE BY (shuffle)",
    r"\bover\s*\(": "a window function (OVER)",
    r"\blimit\b": "LIMIT",
    r"\b(?:count|sum|avg|mean|min|max|collect_list|collect_set|approx_count_distinct|percentile_approx)\s*\(": "an aggregate function",
}
_TWICE = "the view `source` twice"
_NOT_CODE = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|`[^`]*`|--[^\n]*|/\*.*?\*/", re.S)


def _min_batch_ms(spec: WholeSpec) -> tuple[int | None, str]:
    """Spark's minimum batch duration for this job: the spec's ``spark_conf`` (a Spark time string) or the default."""
    given = spec.spark_conf_strings().get(MIN_BATCH_CONF)
    if given is None:
        return _MIN_BATCH_DEFAULT_MS, f"{_SPARK}'s default for {MIN_BATCH_CONF}"
    return time_string_ms(given, "ms"), f"spark_conf.{MIN_BATCH_CONF}"


def sql_operators_refused(sql: str) -> list[str]:
    """The operators outside real-time mode's allow-list that ``sql`` plans whatever its tables hold, and a
    second read of the stream (strings, quoted names and comments are not read)."""
    code = _NOT_CODE.sub(" ", sql).lower()
    found = [what for pattern, what in _REFUSED_SQL.items() if re.search(pattern, code)]
    if len(re.findall(r"\b(?:from|join)\s+source\b", code)) > 1:
        found.append(_TWICE)
    return found


def real_time_violations(spec: WholeSpec) -> list[tuple[str, str]]:
    """``(field, reason)`` for each real-time rule ``spec`` breaks; empty for another trigger. (Async progress
    tracking with real time is refused among the async rules, spec/rules.py.)"""
    if spec.trigger.kind != "real_time":
        return []
    problems = _duration_and_state(spec)
    if spec.application is not None:
        return problems  # its own file builds source, operators and sink: Spark checks those
    allowlist = spec.spark_conf_strings().get(ALLOWLIST_CONF, "true").strip().lower() != "false"
    return problems + _endpoints(spec, allowlist) + _operators(spec, allowlist)


def _duration_and_state(spec: WholeSpec) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    duration_ms = spec.trigger.interval_ms() or 0
    minimum, where = _min_batch_ms(spec)
    if minimum is None:
        problems.append((where, "is not a Spark time such as '5s' or '5000ms'"))
    elif duration_ms < minimum:
        problems.append(
            (
                "trigger.real_time",
                f"{duration_ms} ms is below the minimum batch duration of real-time "
                f"mode, {minimum} ms ({where}; {_SPARK}: INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL)",
            )
        )
    if spec.stateful:
        problems.append(
            (
                "stateful",
                f"real-time mode runs only stateless queries in {_SPARK} (its operator "
                "allow-list has no aggregation, deduplication or state)",
            )
        )
    return problems


def _endpoints(spec: WholeSpec, allowlist: bool) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    if spec.source is not None and spec.source.format.lower() not in REAL_TIME_SOURCES:
        problems.append(
            (
                "source.format",
                f"source {spec.source.format!r} has no real-time reads in {_SPARK}, only "
                "Kafka does (STREAMING_REAL_TIME_MODE.INPUT_STREAM_NOT_SUPPORTED, at the first batch)",
            )
        )
    if spec.sink is not None:
        if (spec.sink.output_mode or "append") != "update":
            problems.append(
                (
                    "sink.output_mode",
                    f"real-time mode needs output mode update, not "
                    f"{spec.sink.output_mode or 'append (the default)'} ({_SPARK}: "
                    "STREAMING_REAL_TIME_MODE.OUTPUT_MODE_NOT_SUPPORTED)",
                )
            )
        if allowlist and spec.sink.format.lower() not in REAL_TIME_SINKS:
            problems.append(
                (
                    "sink.format",
                    f"sink {spec.sink.format!r} is not in real-time mode's allow-list in "
                    f"{_SPARK} (only {', '.join(sorted(REAL_TIME_SINKS))}: "
                    "STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST)",
                )
            )
    return problems


def _operators(spec: WholeSpec, allowlist: bool) -> list[tuple[str, str]]:
    problems: list[tuple[str, str]] = []
    sql = spec.transform.sql if spec.transform else None
    refused = sql_operators_refused(sql) if sql and allowlist else []
    operators = [what for what in refused if what != _TWICE]
    if operators:
        problems.append(
            (
                "transform.sql",
                f"uses {', '.join(operators)}, outside real-time mode's operator "
                f"allow-list in {_SPARK} (STREAMING_REAL_TIME_MODE.OPERATOR_OR_SINK_NOT_IN_ALLOWLIST)",
            )
        )
    if _TWICE in refused:
        problems.append(
            (
                "transform.sql",
                f"reads the view `source` twice: {_SPARK} runs no query reading one "
                "stream twice in real-time mode (STREAMING_REAL_TIME_MODE.IDENTICAL_SOURCES_IN_UNION_NOT_SUPPORTED)",
            )
        )
    return problems
