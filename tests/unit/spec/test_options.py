"""Options of Spark's built-in sources and sinks that Spark checks: refused at parse naming the option, values
never repeated; what Spark accepts passes (tests/integration/test_interval_agreement.py asks Spark itself about
the rate sources' options)."""

from __future__ import annotations

from typing import Any

import pytest

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop


def problems(**changes: Any) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec({**rate_noop("opts"), **changes})
    return dict(info.value.problems)


def kafka(**options: Any) -> dict[str, Any]:
    return {"format": "kafka", "options": {"subscribe": "clicks", **options}, "connection": "kafka_default"}


@pytest.mark.parametrize(
    ("source", "field", "needle"),
    [
        ({"format": "rate", "options": {"rowsPerSecond": -3}}, "rowsPerSecond", "must be above 0"),
        ({"format": "rate", "options": {"rowsPerSecond": "fast"}}, "rowsPerSecond", "must be a whole number"),
        ({"format": "rate", "options": {"ROWSPERSECOND": 1.5}}, "ROWSPERSECOND", "must be a whole number"),
        ({"format": "rate", "options": {"numPartitions": 0}}, "numPartitions", "must be above 0"),
        ({"format": "rate", "options": {"numPartitions": 2**31}}, "numPartitions", "a Java int"),
        ({"format": "rate", "options": {"rampUpTime": "-1s"}}, "rampUpTime", "must not be negative"),
        ({"format": "rate", "options": {"rampUpTime": "5 seconds"}}, "rampUpTime", "a Spark time such as '10s'"),
        ({"format": "rate-micro-batch", "options": {"rowsPerBatch": 0}}, "rowsPerBatch", "must be above 0"),
        ({"format": "rate-micro-batch"}, "rowsPerBatch", "is required"),
        (
            {"format": "rate-micro-batch", "options": {"rowsPerBatch": 5, "startTimestamp": -1}},
            "startTimestamp",
            "must be 0 or more",
        ),
        (
            {"format": "rate-micro-batch", "options": {"rowsPerBatch": 5, "advanceMillisPerBatch": "x"}},
            "advanceMillisPerBatch",
            "must be a whole number",
        ),
        (kafka(startingOffsets="newest"), "startingOffsets", "must be latest, earliest, or JSON"),
        (kafka(startingOffsets='{"clicks": {"0": "23"}}'), "startingOffsets", "must be latest, earliest, or JSON"),
        (kafka(maxOffsetsPerTrigger="10k"), "maxOffsetsPerTrigger", "must be a whole number"),
        (kafka(minOffsetsPerTrigger=100, maxOffsetsPerTrigger=10), "minOffsetsPerTrigger", "higher than max"),
        (kafka(minPartitions=0), "minPartitions", "must be above 0"),
        (kafka(failOnDataLoss="no"), "failOnDataLoss", "must be true or false"),
        (kafka(endingOffsets="latest"), "endingOffsets", "not valid in streaming queries"),
        (kafka(**{"kafka.auto.offset.reset": "earliest"}), "kafka.auto.offset.reset", "is not supported"),
    ],
)
def test_source_options_spark_refuses_are_refused_naming_the_option(
    source: dict[str, Any], field: str, needle: str
) -> None:
    found = problems(source=source)
    assert needle in found[f"source.options.{field}"], found
    for value in (source.get("options") or {}).values():
        if len(str(value)) > 2:
            assert str(value) not in found[f"source.options.{field}"], "an option value was repeated"


@pytest.mark.parametrize(
    "source",
    [
        {"format": "rate", "options": {"rowsPerSecond": "+1000", "numPartitions": 2, "rampUpTime": "2MIN"}},
        {"format": "rate", "options": {"rampUpTime": 0}},
        {"format": "rate-micro-batch", "options": {"rowsPerBatch": 10, "advanceMillisPerBatch": 0}},
        kafka(startingOffsets=" Earliest "),
        kafka(
            startingOffsets='{"clicks": {"0": 23, "1": -1}, "other": {"0": -2}}',
            maxOffsetsPerTrigger=5000,
            minOffsetsPerTrigger=10,
            failOnDataLoss="FALSE",
            includeHeaders=True,
            startingTimestamp=" 1700000 ",
        ),
        {"format": "kafka", "options": {"subscribePattern": "clicks-.*", "kafka.bootstrap.servers": "b:9092"}},
        {"format": "parquet", "options": {"path": "/in"}, "schema": "id INT"},
    ],
)
def test_options_spark_accepts_pass(source: dict[str, Any]) -> None:
    assert parse_spec({**rate_noop("opts"), "source": source}).source.format == source["format"]


def test_a_kafka_source_reads_one_way_only() -> None:
    none = problems(source={"format": "kafka", "connection": "kafka_default"})
    assert "give exactly one of assign, subscribe or subscribePattern" in none["source.options"]
    both = problems(source=kafka(assign='{"clicks": [0]}'))
    assert both["source.options"].endswith("not assign and subscribe")
    assert "names no topic" in problems(source=kafka(subscribe=" , "))["source.options.subscribe"]


def test_file_sinks_need_their_directory_and_kafka_sinks_refuse_serializers() -> None:
    assert "give its path" in problems(sink={"format": "csv"})["sink.options.path"]
    sink = {"format": "kafka", "options": {"kafka.value.serializer": "x.Y"}, "connection": "kafka_default"}
    assert "not supported by Spark's Kafka sink" in problems(sink=sink)["sink.options.kafka.value.serializer"]
    assert parse_spec({**rate_noop("opts"), "sink": {"format": "json", "options": {"PATH": "/out"}}})
