"""Real-time mode's rules: each combination the pinned Spark refuses is refused naming the field and Spark's
error; a job Spark runs in real-time mode passes. Spark cannot run real-time mode here (its only source is
Kafka, whose connector jar is not reachable), so the rules are checked against the pinned release's own
jars: the error classes they cite and the allow-lists they encode are read from them."""

from __future__ import annotations

import json
import zipfile
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pyspark  # noqa: E402  (tests may read the pinned release's jars; the package never imports it here)
import pytest

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.realtime import REAL_TIME_RULES_READ_FROM, sql_operators_refused
from tests.helpers import real_time

JARS = Path(pyspark.__file__).parent / "jars"


def problems(data: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return dict(info.value.problems)


def _jar(prefix: str) -> zipfile.ZipFile:
    return zipfile.ZipFile(next(JARS.glob(f"{prefix}_2.13-{REAL_TIME_RULES_READ_FROM}.jar")))


def test_a_job_spark_runs_in_real_time_mode_is_accepted() -> None:
    spec = parse_spec(real_time())
    assert spec.trigger.kind == "real_time" and spec.trigger.spark_kwargs() == {"realTime": "5 seconds"}
    assert spec.trigger.interval_ms() == 5000
    assert parse_spec(real_time(sink={"format": "console", "output_mode": "update"})).sink.format == "console"


@pytest.mark.parametrize(
    ("changes", "field", "needle"),
    [
        (
            {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}},
            "trigger.real_time",
            "ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED",
        ),
        ({"sink": {"format": "kafka", "output_mode": "append"}}, "sink.output_mode", "OUTPUT_MODE_NOT_SUPPORTED"),
        ({"sink": {"format": "kafka"}}, "sink.output_mode", "not append (the default)"),
        ({"sink": {"format": "kafka", "output_mode": "complete"}}, "sink.output_mode", "needs output mode update"),
        ({"source": {"format": "rate"}}, "source.format", "INPUT_STREAM_NOT_SUPPORTED"),
        ({"sink": {"format": "noop", "output_mode": "update"}}, "sink.format", "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST"),
        ({"sink": {"format": "memory", "output_mode": "update"}}, "sink.format", "only console, kafka"),
        ({"trigger": {"real_time": "4 seconds"}}, "trigger.real_time", "4000 ms is below the minimum batch duration"),
        ({"trigger": {"real_time": "0 seconds"}}, "trigger.real_time", "must be above 0 ms"),
        ({"stateful": True}, "stateful", "only stateless queries"),
        (
            {"transform": {"sql": "SELECT key, count(*) FROM source GROUP BY key"}},
            "transform.sql",
            "GROUP BY (aggregation), an aggregate function",
        ),
        (
            {"transform": {"sql": "SELECT key FROM source UNION ALL SELECT key FROM source"}},
            "transform.sql",
            "IDENTICAL_SOURCES_IN_UNION_NOT_SUPPORTED",
        ),
        (
            {"spark_conf": {"spark.sql.streaming.realTimeMode.minBatchDuration": "5 s"}},
            "spark_conf.spark.sql.streaming.realTimeMode.minBatchDuration",
            "is not a Spark time",
        ),
    ],
)
def test_each_combination_spark_refuses_is_refused_naming_the_field(
    changes: dict[str, Any], field: str, needle: str
) -> None:
    found = problems(real_time(**changes))
    assert needle in found[field], found


def test_the_specs_own_spark_settings_move_the_minimum_and_lift_the_allow_list() -> None:
    conf = {
        "spark.sql.streaming.realTimeMode.minBatchDuration": "1s",
        "spark.sql.streaming.realTimeMode.allowlistCheck": False,
    }
    spec = parse_spec(
        real_time(trigger={"real_time": "1 second"}, sink={"format": "noop", "output_mode": "update"}, spark_conf=conf)
    )
    assert spec.trigger.interval_ms() == 1000
    as_text = {**conf, "spark.sql.streaming.realTimeMode.allowlistCheck": " FALSE "}  # Spark trims, any case
    assert parse_spec(real_time(sink={"format": "noop", "output_mode": "update"}, spark_conf=as_text))
    # Not lifted by the allow-list setting: the source, the output mode and async (Spark checks them elsewhere).
    still = problems(real_time(source={"format": "rate"}, sink={"format": "noop"}, spark_conf=conf))
    assert set(still) == {"source.format", "sink.output_mode"}


def test_a_users_own_application_is_checked_for_what_the_spec_says() -> None:
    app = real_time(application="/opt/jobs/app.py", source=None, transform=None, sink=None)
    app = {k: v for k, v in app.items() if v is not None}
    assert parse_spec(app).trigger.kind == "real_time"
    assert set(problems({**app, "trigger": {"real_time": "1 second"}, "stateful": True})) == {
        "trigger.real_time",
        "stateful",
    }


@pytest.mark.parametrize(
    ("sql", "refused"),
    [
        ("SELECT key, value FROM source WHERE value > 0", []),
        ("SELECT key FROM source WHERE key > 1 UNION ALL SELECT key FROM dim", []),
        ("SELECT key FROM source UNION ALL SELECT key FROM source", ["the view `source` twice"]),
        ("SELECT explode(split(value, ',')) AS word FROM source", []),
        ("SELECT 'group by', `count(` FROM source -- ORDER BY key\n WHERE key <> \"limit\" /* distinct */", []),
        ("SELECT DISTINCT key FROM source", ["DISTINCT (aggregation)"]),
        ("SELECT key FROM source ORDER BY key LIMIT 5", ["ORDER/SORT BY (sort)", "LIMIT"]),
        (
            "SELECT key, row_number() OVER (PARTITION BY key ORDER BY ts) FROM source",
            ["ORDER/SORT BY (sort)", "a window function (OVER)"],
        ),
        ("SELECT * FROM source DISTRIBUTE BY key", ["CLUSTER/DISTRIBUTE BY (shuffle)"]),
        ("SELECT max(value) FROM source", ["an aggregate function"]),
    ],
)
def test_sql_operators_outside_the_allow_list_are_found_but_never_in_strings_names_or_comments(
    sql: str, refused: list[str]
) -> None:
    assert sql_operators_refused(sql) == refused


def test_the_rules_follow_the_pyspark_release_the_runtime_carries() -> None:
    assert version("pyspark") == REAL_TIME_RULES_READ_FROM, "re-read real-time mode's rules for this release"


def test_every_spark_error_the_rules_cite_is_one_of_the_pinned_releases() -> None:
    with _jar("spark-common-utils") as jar:
        conditions = json.loads(jar.read("error/error-conditions.json"))
    real_time_errors = set(conditions["STREAMING_REAL_TIME_MODE"]["subClass"])
    assert {
        "ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED",
        "OUTPUT_MODE_NOT_SUPPORTED",
        "INPUT_STREAM_NOT_SUPPORTED",
        "OPERATOR_OR_SINK_NOT_IN_ALLOWLIST",
        "IDENTICAL_SOURCES_IN_UNION_NOT_SUPPORTED",
    } <= real_time_errors
    assert "INVALID_STREAMING_REAL_TIME_MODE_TRIGGER_INTERVAL" in conditions
    assert "UNRECOGNIZED_NUMBER" in conditions["INVALID_INTERVAL_FORMAT"]["subClass"]


def test_the_allow_lists_encoded_are_the_pinned_releases() -> None:
    with _jar("spark-sql") as jar:
        allowlist = jar.read("org/apache/spark/sql/execution/streaming/runtime/RealTimeModeAllowlist$.class")
    for allowed in (
        b"ConsoleTable$",
        b"KafkaSourceProvider$KafkaTable",
        b"ProjectExec",
        b"FilterExec",
        b"UnionExec",
        b"GenerateExec",
        b"BroadcastHashJoinExec",
    ):
        assert allowed in allowlist, allowed
    for refused in (
        b"NoopTable",
        b"sources.MemorySink",
        b"HashAggregateExec",
        b"SortExec",
        b"ShuffleExchangeExec",
        b"WindowExec",
        b"LimitExec",
    ):
        assert refused not in allowlist, refused
