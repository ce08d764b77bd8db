"""Property-based: whatever a spec or spec file holds, the only error is a SpecError naming a field."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import load_spec, parse_spec
from airflow_async_stream.spec.model import JobSpec
from tests.helpers import rate_noop

FIELDS = [
    "name",
    "checkpoint",
    "source",
    "transform",
    "sink",
    "trigger",
    "async_progress",
    "spark_conf",
    "stateful",
    "application",
    "options",
    "format",
    "sql",
    "entrypoint",
    "once",
    "available_now",
    "continuous",
    "processing_time",
    "enabled",
    "checkpoint_interval_ms",
    "output_mode",
    "schema",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.floats(allow_nan=True),
    st.text(max_size=30),
    st.sampled_from(["rate", "noop", "kafka", "parquet", "/ck/x", "s3://b/x", "1 second", "../x", "a;rm -rf /"]),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(FIELDS), inner, max_size=5)),
    max_leaves=20,
)
specs = st.dictionaries(st.sampled_from(FIELDS), values, max_size=8)
VALID = rate_noop("p")


def _judge(data: Any) -> None:
    try:
        spec = parse_spec(data)
    except SpecError as exc:
        assert exc.problems, "a SpecError must name at least one field"
        for field, reason in exc.problems:
            assert field and reason and isinstance(field, str) and isinstance(reason, str)
    else:
        assert isinstance(spec, JobSpec)


@settings(max_examples=400, deadline=None)
@given(specs)
def test_any_mapping_gives_a_spec_or_a_spec_error(data: dict[str, Any]) -> None:
    _judge(data)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), values, max_size=4))
def test_changes_to_a_valid_spec_give_a_spec_or_a_spec_error(changes: dict[str, Any]) -> None:
    _judge({**VALID, **changes})


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200).map(lambda b: b.decode("latin-1"))))
def test_any_file_content_gives_a_spec_or_a_spec_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogateescape")
    try:
        load_spec(path)
    except SpecError as exc:
        assert exc.problems and str(path) in str(exc)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(specs)
def test_yaml_dumped_specs_load_like_mappings(tmp_path: Path, data: dict[str, Any]) -> None:
    path = tmp_path / "job.yaml"
    try:
        path.write_text(yaml.safe_dump(data))
    except yaml.YAMLError:
        return
    try:
        load_spec(path)
    except SpecError as exc:
        assert exc.problems
