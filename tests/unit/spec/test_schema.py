"""``airflow-async-stream schema`` refuses what the loader refuses: both judge the same generated specs alike,
and every whole spec in the README passes both."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
import yaml
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.schema import LOADER_ONLY, spec_json_schema
from tests.readme_blocks import BLOCKS

VALIDATOR = jsonschema.Draft202012Validator(spec_json_schema())


def schema_says(data: dict[str, Any]) -> bool:
    return VALIDATOR.is_valid(data)


def loader_says(data: dict[str, Any]) -> bool:
    try:
        parse_spec(data)
    except SpecError:
        return False
    return True


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field left out (the sentinel), given as null, or given."""
    return st.one_of(st.just(...), st.none(), strategy)


def fields(**parts: st.SearchStrategy[Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(parts).map(lambda d: {k: v for k, v in d.items() if v is not ...})


#: Values the rules only the loader checks (LOADER_ONLY) accept: intervals Spark parses, options Spark takes.
triggers = fields(
    processing_time=maybe(st.just("1 second")),
    once=maybe(st.just(True)),
    available_now=maybe(st.just(True)),
    continuous=maybe(st.just("1 second")),
    real_time=maybe(st.just("5 seconds")),
)
option_names = st.sampled_from(
    [
        "rowsPerSecond",
        "x.password",
        "Secret.Key",
        "checkpointLocation",
        "asyncProgressTrackingEnabled",
        "numPartitions",
        "spark.access_key",
    ]
)
sources = st.one_of(
    fields(
        format=st.just("rate"),
        options=maybe(st.dictionaries(option_names, st.just("1"), max_size=2)),
        connection=maybe(st.just("kafka_default")),
    ),
    fields(
        format=st.sampled_from(["kafka", "Kafka"]),
        options=st.just({"subscribe": "t"}),
        connection=maybe(st.just("kafka_default")),
    ),
)
sinks = st.one_of(
    fields(
        format=st.sampled_from(["noop", "console", "memory", "NoOp"]),
        options=maybe(st.dictionaries(option_names, st.just("1"), max_size=2)),
        connection=maybe(st.just("kafka_default")),
    ),
    fields(
        format=st.just("kafka"),
        options=st.just({"topic": "t"}),
        connection=maybe(st.just("kafka_default")),
        secret_options=maybe(st.dictionaries(option_names, st.just("conn"), max_size=1)),
    ),
    fields(format=st.sampled_from(["parquet", "json"]), options=st.just({"path": "/data/out"})),
)
transforms = fields(sql=maybe(st.just("SELECT * FROM source")), entrypoint=maybe(st.just("jobs.clicks:build")))
specs = fields(
    name=st.just("clicks"),
    checkpoint=st.just("/data/ck/clicks"),
    source=maybe(sources),
    sink=maybe(sinks),
    transform=maybe(transforms),
    application=maybe(st.just("/jobs/clicks.py")),
    trigger=maybe(triggers),
    async_progress=maybe(fields(enabled=maybe(st.booleans()), checkpoint_interval_ms=maybe(st.just(0)))),
    stateful=maybe(st.booleans()),
    spark_conf=maybe(st.dictionaries(option_names, st.just("1"), max_size=2)),
)


@settings(max_examples=1500, deadline=None)
@given(specs)
def test_the_schema_and_the_loader_judge_a_spec_alike(data: dict[str, Any]) -> None:
    kinds = [k for k, v in (data.get("trigger") or {}).items() if v is not None]
    assume(kinds != ["real_time"])  # real-time mode's own rules are the loader's alone (LOADER_ONLY)
    assert schema_says(data) == loader_says(data), (data, [e.message for e in VALIDATOR.iter_errors(data)][:3])


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ({"trigger": {"processing_time": "1 second", "once": True}}, "two trigger kinds"),
        ({"transform": {"sql": "SELECT 1", "entrypoint": "a:b"}}, "a transform with both"),
        ({"transform": {}}, "a transform with neither"),
        ({"source": None, "sink": None}, "neither source nor application"),
        ({"application": "/jobs/a.py"}, "an application beside a source"),
        ({"async_progress": {"enabled": True}, "trigger": {"available_now": True}}, "async with available-now"),
        ({"async_progress": {"enabled": True}, "sink": {"format": "parquet", "options": {"path": "/o"}}}, "sink"),
        ({"source": {"format": "rate", "connection": "kafka_default"}}, "a connection on a non-Kafka source"),
        ({"sink": {"format": "noop", "options": {"checkpointLocation": "/x"}}}, "a writer option the spec owns"),
    ],
)
def test_the_schema_refuses_what_the_issue_found_it_let_through(change: dict[str, Any], why: str) -> None:
    data = {"name": "c", "checkpoint": "/ck/c", "source": {"format": "rate"}, "sink": {"format": "noop"}, **change}
    assert not loader_says(data), why
    assert not schema_says(data), why


def test_the_schema_names_what_only_the_loader_checks() -> None:
    assert all(rule in spec_json_schema()["$comment"] for rule in LOADER_ONLY)


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "yaml" and b.kind is None], ids=str)
def test_every_whole_spec_in_the_readme_passes_the_schema(block: Any) -> None:
    data = yaml.safe_load(block.body)
    assert schema_says(data), [e.message for e in VALIDATOR.iter_errors(data)]
