"""Every spec rule is refused with the field named and the reason given; good specs pass."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import load_spec, parse_spec, resolve_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.schema import spec_json_schema

REPO = Path(__file__).resolve().parents[3]


def good(**changes: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "name": "clicks-to-alerts",
        "checkpoint": "/data/ck/clicks-to-alerts",
        "source": {"format": "rate", "options": {"rowsPerSecond": "1000"}},
        "transform": {"sql": "SELECT value, timestamp FROM source WHERE value % 2 = 0"},
        "sink": {"format": "noop", "options": {}},
        "trigger": {"processing_time": "500 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 1000},
        "spark_conf": {},
    }
    spec.update(changes)
    return spec


def problems(data: Any) -> dict[str, str]:
    with pytest.raises(SpecError) as info:
        parse_spec(data)
    return dict(info.value.problems)


def test_the_documented_example_is_valid() -> None:
    spec = parse_spec(good())
    assert spec.writer_options() == {
        "checkpointLocation": "/data/ck/clicks-to-alerts",
        "asyncProgressTrackingEnabled": "true",
        "asyncProgressTrackingCheckpointIntervalMs": "1000",
    }
    assert spec.trigger.spark_kwargs() == {"processingTime": "500 milliseconds"}


@pytest.mark.parametrize("kind", ["once", "available_now"])
def test_async_with_once_or_available_now_is_refused(kind: str) -> None:
    found = problems(good(trigger={kind: True}))
    assert f"cannot be used with the {kind} trigger" in found[f"trigger.{kind}"]


def test_the_same_triggers_are_fine_without_async() -> None:
    spec = parse_spec(good(trigger={"available_now": True}, async_progress={"enabled": False}))
    assert spec.trigger.spark_kwargs() == {"availableNow": True}


def test_async_with_continuous_trigger_is_refused_because_spark_ignores_it() -> None:
    assert "silently ignores" in problems(good(trigger={"continuous": "1 second"}))["trigger.continuous"]


@pytest.mark.parametrize("sink", ["parquet", "delta", "foreachBatch", "json"])
def test_async_with_a_sink_spark_does_not_allow_is_refused(sink: str) -> None:
    reason = problems(good(sink={"format": sink}))["sink.format"]
    assert sink in reason and "console, kafka, memory, noop" in reason


@pytest.mark.parametrize("sink", ["kafka", "console", "memory", "noop", "KAFKA"])
def test_async_sinks_are_allowed(sink: str) -> None:
    assert parse_spec(good(sink={"format": sink})).sink.format == sink


def test_async_with_a_declared_stateful_query_is_refused() -> None:
    assert "stateless" in problems(good(stateful=True))["stateful"]


@pytest.mark.parametrize(
    ("value", "needle"),
    [("abc", "valid integer"), (1.5, "valid integer"), (-1, "greater than or equal to 0"), (True, "valid integer")],
)
def test_checkpoint_interval_must_be_a_non_negative_integer(value: Any, needle: str) -> None:
    reason = problems(good(async_progress={"enabled": True, "checkpoint_interval_ms": value}))
    assert needle in reason["async_progress.checkpoint_interval_ms"]


def test_interval_zero_is_allowed() -> None:
    assert (
        parse_spec(good(async_progress={"enabled": True, "checkpoint_interval_ms": 0})).writer_options()[
            "asyncProgressTrackingCheckpointIntervalMs"
        ]
        == "0"
    )


def test_missing_checkpoint_is_refused() -> None:
    data = good()
    del data["checkpoint"]
    assert problems(data) == {"checkpoint": "is required"}


def test_relative_checkpoint_is_refused_and_urls_are_accepted() -> None:
    assert "absolute path or a URL" in problems(good(checkpoint="ck/x"))["checkpoint"]
    assert parse_spec(good(checkpoint="s3://bucket/ck/x")).checkpoint == "s3://bucket/ck/x"


@pytest.mark.parametrize(
    ("checkpoint", "needle"),
    [
        ("/", "must not be / (its control area would be .async-stream in the current folder)"),
        ("//", "must not be / (its control area"),
        ("file:///", "must not be / (its control area"),
        (str(Path.home()), f"must not be the home folder {Path.home()}"),
        (f"{Path.home()}/", "must not be the home folder"),
        ("/data/ck.async-stream/x", "must not be in or be a job's control area (ck.async-stream)"),
        ("s3://b/ck.async-stream", "must not be in or be a job's control area (ck.async-stream)"),
    ],
)
def test_a_checkpoint_that_is_no_job_folder_is_refused(checkpoint: str, needle: str) -> None:
    assert needle in problems(good(checkpoint=checkpoint))["checkpoint"]


@pytest.mark.parametrize("spelling", ["/data//ck/x", "/data/./ck/x/", "file:///data/ck/x", "file:/data/ck/x"])
def test_one_local_checkpoint_has_one_spelling(spelling: str) -> None:
    """Two spellings of one folder were two jobs to a desired folder and one checkpoint to Spark."""
    assert parse_spec(good(checkpoint=spelling)).checkpoint == "/data/ck/x"


@pytest.mark.parametrize(
    ("data", "field", "nearest"),
    [
        (
            good(async_progress={"enabled": True, "checkpoint_intervall_ms": 5}),
            "async_progress.checkpoint_intervall_ms",
            "checkpoint_interval_ms",
        ),
        (good(sink={"format": "noop", "option": {}}), "sink.option", "options"),
        (good(source={"format": "rate", "shema": "id INT"}), "source.shema", "schema"),  # the field's alias
        (good(trigers={"once": True}), "trigers", "trigger"),
        (good(triger={"once": True}), "triger", "trigger"),
        (good(trigger={"processingTime": "1 second"}), "trigger.processingTime", "processing_time"),
        (good(restart={"max_retrys": 3}), "restart.max_retrys", "max_restarts"),
        (good(restart={"jitter": 3}), "restart.jitter", None),  # nothing near enough: no guess
        (good(zzz=1), "zzz", None),
    ],
)
def test_unknown_keys_are_refused_with_the_nearest_field(data: dict[str, Any], field: str, nearest: str | None) -> None:
    reason = problems(data)[field]
    assert reason.startswith("unknown key")
    assert reason == (
        f"unknown key: did you mean `{nearest}`?"
        if nearest
        else "unknown key (check the spelling; unknown keys are refused)"
    )


@pytest.mark.parametrize("name", ["../etc", "Upper", "a b", "", "x" * 64, "-lead", "a;rm -rf /"])
def test_job_names_are_restricted(name: str) -> None:
    assert "a-z, 0-9" in problems(good(name=name))["name"]


@pytest.mark.parametrize(
    "key", ["checkpointLocation", "asyncProgressTrackingEnabled", "ASYNCPROGRESSTRACKINGCHECKPOINTINTERVALMS"]
)
def test_sink_options_cannot_bypass_the_spec(key: str) -> None:
    assert "set by the spec field" in problems(good(sink={"format": "noop", "options": {key: "x"}}))["sink.options"]


def test_option_values_are_never_echoed_in_errors() -> None:
    error = problems(good(sink={"format": "noop", "options": {"kafka.sasl.jaas.config": ["s3cr3t-value"]}}))
    assert "s3cr3t-value" not in json.dumps(error)


def test_transform_needs_exactly_one_kind() -> None:
    assert "exactly one" in problems(good(transform={}))["transform"]
    both = good(transform={"sql": "SELECT 1", "entrypoint": "a.b:c"})
    assert "exactly one" in problems(both)["transform"]
    assert "should match pattern" in problems(good(transform={"entrypoint": "no-colon"}))["transform.entrypoint"]


def test_two_trigger_kinds_are_refused() -> None:
    assert (
        "one trigger kind"
        in problems(good(trigger={"processing_time": "1 second", "continuous": "1 second"}))["trigger"]
    )


def test_application_replaces_source_and_transform() -> None:
    data = good(application="/opt/apps/job.py")
    del data["source"], data["transform"], data["sink"]
    assert parse_spec(data).application == "/opt/apps/job.py"
    assert "drop `source`" in problems(good(application="/opt/apps/job.py"))["application"]
    without = good()
    del without["source"]
    assert "required unless `application`" in problems(without)["source"]


def test_every_problem_is_reported_at_once() -> None:
    found = problems(
        good(trigger={"once": True}, sink={"format": "parquet", "options": {"path": "/out"}}, stateful=True)
    )
    assert set(found) == {"trigger.once", "sink.format", "stateful"}
    found = problems(
        good(trigger={"processing_time": "2s"}, source={"format": "rate", "options": {"rowsPerSecond": 0}})
    )
    assert set(found) == {"trigger.processing_time", "source.options.rowsPerSecond"}


def test_error_message_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: x\ncheckpoint: /ck/x\nsource: {format: rate}\nsink: {format: parquet}\nasync_progress: {enabled: true}\n"
    )
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert str(path) in str(info.value) and "sink.format" in str(info.value)


@pytest.mark.parametrize(
    ("text", "needle"),
    [("", "is empty"), ("name: [unclosed", "not valid YAML"), ("- a\n- b\n", "must be a mapping")],
)
def test_bad_yaml_files_give_clear_errors(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "job.yaml"
    path.write_text(text)
    with pytest.raises(SpecError, match=needle):
        load_spec(path)


def test_json_files_load(tmp_path: Path) -> None:
    path = tmp_path / "job.json"
    path.write_text(json.dumps(good()))
    assert load_spec(path) == parse_spec(good())


def test_missing_file_is_a_spec_error(tmp_path: Path) -> None:
    with pytest.raises(SpecError, match="cannot be read"):
        load_spec(tmp_path / "nope.yaml")


def test_yaml_numbers_and_booleans_become_spark_strings() -> None:
    spec = parse_spec(
        good(source={"format": "rate", "options": {"rowsPerSecond": 10, "x": True}}, spark_conf={"a": 1.5})
    )
    assert spec.source.spark_options() == {"rowsPerSecond": "10", "x": "true"}
    assert spec.spark_conf_strings() == {"spark.log.level": "WARN", "a": "1.5"}


def test_spark_logs_at_warn_unless_the_spec_asks_for_another_level() -> None:
    assert parse_spec(good(logs={"spark_level": "info"})).spark_conf_strings()["spark.log.level"] == "INFO"
    own = parse_spec(good(spark_conf={"spark.log.level": "ERROR"}))
    assert own.spark_conf_strings()["spark.log.level"] == "ERROR"  # the spec's own spark_conf wins


@pytest.mark.parametrize(
    ("logs", "field", "needle"),
    [
        ({"spark_level": "LOUD"}, "logs.spark_level", "must be one of ALL, TRACE"),
        ({"driver_log_max_bytes": 100}, "logs.driver_log_max_bytes", "greater than or equal to 4096"),
        ({"driver_log_files": 0}, "logs.driver_log_files", "greater than or equal to 1"),
        ({"progress_max_bytes": "16MB"}, "logs.progress_max_bytes", "valid integer"),
        ({"progress_max_age_hours": 0}, "logs.progress_max_age_hours", "greater than 0"),
        ({"driver_log_level": "WARN"}, "logs.driver_log_level", "unknown key"),
        ({"control_write_interval_s": -1}, "logs.control_write_interval_s", "greater than or equal to 0"),
        ({"control_write_interval_s": 600}, "logs.control_write_interval_s", "less than or equal to 60"),
    ],
)
def test_bad_log_settings_name_the_field(logs: dict[str, Any], field: str, needle: str) -> None:
    assert needle in problems(good(logs=logs))[field]


def test_a_spec_without_log_settings_keeps_its_file_form_and_gets_the_defaults() -> None:
    spec = parse_spec(good())
    assert "logs" not in spec.to_mapping()  # specs deployed before the section existed compare equal
    assert (spec.log_settings.driver_log_max_bytes, spec.log_settings.driver_log_files) == (4 * 1024 * 1024, 3)
    assert spec.log_settings.progress_max_bytes == 16 * 1024 * 1024


def test_records_are_written_every_10_s_on_object_stores_and_as_they_come_on_disks_unless_set() -> None:
    logs = parse_spec(good()).log_settings
    assert (logs.write_interval_s(appendable=False), logs.write_interval_s(appendable=True)) == (10.0, 0.0)
    logs = parse_spec(good(logs={"control_write_interval_s": 0})).log_settings
    assert logs.write_interval_s(appendable=False) == 0.0  # as before, on purpose
    logs = parse_spec(good(logs={"control_write_interval_s": 30})).log_settings
    assert (logs.write_interval_s(appendable=False), logs.write_interval_s(appendable=True)) == (30.0, 30.0)


def test_overrides_are_validated_with_the_spec() -> None:
    spec = resolve_spec(good(), {"async_progress": {"checkpoint_interval_ms": 0}})
    assert spec.async_progress.enabled and spec.async_progress.checkpoint_interval_ms == 0
    with pytest.raises(SpecError, match="trigger.once"):
        resolve_spec(parse_spec(good()), {"trigger": {"processing_time": None, "once": True}})


def test_example_spec_files_are_valid() -> None:
    for path in (REPO / "dags" / "specs").glob("*.yaml"):
        assert isinstance(load_spec(path), JobSpec)


def test_json_schema_names_the_contract_fields() -> None:
    schema = spec_json_schema()
    assert {"name", "checkpoint", "source", "transform", "sink", "trigger", "async_progress", "spark_conf"} <= set(
        schema["properties"]
    )
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["name", "checkpoint"]


def test_spec_files_expand_environment_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ASYNC_STREAM_CK_ROOT", "/data/ck")
    monkeypatch.delenv("ASYNC_STREAM_NOT_SET_HERE", raising=False)
    path = tmp_path / "job.yaml"
    path.write_text(
        "name: x\ncheckpoint: ${ASYNC_STREAM_CK_ROOT}/x\n"
        "source: {format: rate, options: {rowsPerSecond: '${ASYNC_STREAM_NOT_SET_HERE:-7}'}}\n"
        "transform: {sql: \"SELECT '$${literal}', '$5' AS v FROM source\"}\n"
        "sink: {format: noop}\n"
    )
    spec = load_spec(path)
    assert spec.checkpoint == "/data/ck/x"
    assert spec.to_mapping()["source"]["options"]["rowsPerSecond"] == "7"
    assert spec.to_mapping()["transform"]["sql"] == "SELECT '${literal}', '$5' AS v FROM source"


@pytest.mark.parametrize(
    ("value", "needle"),
    [
        (
            "${ASYNC_STREAM_NOT_SET_HERE}/x",
            "checkpoint: names the environment variable ASYNC_STREAM_NOT_SET_HERE, which is not set or empty",
        ),
        ("${ASYNC_STREAM_EMPTY_HERE}/x", "checkpoint: names the environment variable ASYNC_STREAM_EMPTY_HERE"),
        ("${1BAD}/x", "checkpoint: ${1BAD} is not a variable reference"),
    ],
)
def test_an_unset_or_malformed_variable_names_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, value: str, needle: str
) -> None:
    monkeypatch.delenv("ASYNC_STREAM_NOT_SET_HERE", raising=False)
    monkeypatch.setenv("ASYNC_STREAM_EMPTY_HERE", "")
    path = tmp_path / "job.yaml"
    path.write_text(f"name: x\ncheckpoint: '{value}'\nsource: {{format: rate}}\nsink: {{format: noop}}\n")
    with pytest.raises(SpecError) as info:
        load_spec(path)
    assert needle in str(info.value) and str(path) in str(info.value)


@pytest.mark.parametrize(
    ("trigger", "needle"),
    [
        ({"processing_time": "soon"}, "INVALID_INTERVAL_FORMAT.UNRECOGNIZED_NUMBER"),
        ({"continuous": "soon"}, "INVALID_INTERVAL_FORMAT.UNRECOGNIZED_NUMBER"),
        ({"processing_time": "-5 seconds"}, "must not be negative"),
        ({"processing_time": "2s"}, "Spark wants '2 seconds'"),
        ({"processing_time": "500 ms"}, "Spark wants '500 milliseconds'"),
        ({"processing_time": "1 month"}, "may not use months or years"),
        ({"real_time": "0 seconds"}, "must be above 0 ms"),
    ],
)
def test_trigger_intervals_spark_would_refuse_are_refused_at_parse_naming_the_field(
    trigger: dict[str, str], needle: str
) -> None:
    found = problems(good(trigger=trigger, async_progress={"enabled": False}))
    field = f"trigger.{next(iter(trigger))}"
    assert needle in found[field], found
    assert repr(next(iter(trigger.values()))) in found[field]  # the value is shown: an interval is no secret


@pytest.mark.parametrize("text", ["interval 2 seconds", "1 minute 30 seconds", "+5 seconds", ".5 seconds", "1 HOUR"])
def test_every_form_spark_parses_is_accepted(text: str) -> None:
    spec = parse_spec(good(trigger={"processing_time": text}))
    assert spec.trigger.spark_kwargs() == {"processingTime": text} and spec.trigger.interval_ms() > 0


@pytest.mark.parametrize(
    ("part", "field", "needle"),
    [
        ({"restart": {"policy": "always"}}, "restart.policy", "'on_failure' or 'never'"),
        ({"restart": {"max_restarts": 0}}, "restart.max_restarts", "greater than or equal to 1"),
        ({"restart": {"within": "0 seconds"}}, "restart.within", "must be above 0 ms"),
        ({"restart": {"backoff": "soon"}}, "restart.backoff", "does not start with a number"),
        ({"restart": {"backoff": "1 hour"}}, "restart", "max_backoff (10 minutes) must not be shorter than backoff"),
        ({"restart": {"retries": 3}}, "restart.retries", "unknown key"),
        # a window shorter than the backoffs never holds max_restarts restarts: never crash_looping
        (
            {"restart": {"within": "1 second", "backoff": "5 seconds", "max_restarts": 1}},
            "restart",
            "within (1 second) must be longer than the backoffs of max_restarts (1) restarts, 5 s",
        ),
        ({"restart": {"max_restarts": 30}}, "restart", "backoffs of max_restarts (30) restarts, 15030 s"),
        ({"health": {"on_stall": "kill"}}, "health.on_stall", "'alert' or 'restart'"),
        ({"state": "paused"}, "state", "'running' or 'suspended'"),
    ],
)
def test_the_supervisor_fields_refuse_bad_values_by_field(part: dict[str, Any], field: str, needle: str) -> None:
    found = problems(good(**part))
    assert needle in found[field], found


def test_the_supervisor_fields_have_the_documented_defaults() -> None:
    spec = parse_spec(good())
    policy = spec.restart_settings
    assert (policy.policy, policy.max_restarts, policy.within_s) == ("on_failure", 5, 3600.0)
    assert [policy.backoff_s(n) for n in (0, 1, 2, 6, 100)] == [10.0, 20.0, 40.0, 600.0, 600.0]
    never = parse_spec(good(restart={"policy": "never", "within": "1 second", "backoff": "5 seconds"}))
    assert never.restart_settings.policy == "never"  # no restarts, so no window to fit them in
    assert spec.health_settings.on_stall == "alert"
    assert not spec.suspended and parse_spec(good(state="suspended")).suspended
    assert "restart" not in spec.to_mapping() and "state" not in spec.to_mapping()  # a file's form is kept


def test_the_json_schema_knows_the_supervisor_fields() -> None:
    schema = spec_json_schema()
    assert {"restart", "state", "health"} <= set(schema["properties"])
    restart = schema["$defs"]["Restart"]["properties"]
    assert restart["policy"]["enum"] == ["on_failure", "never"] and restart["max_restarts"]["default"] == 5
    assert schema["$defs"]["HealthSpec"]["properties"]["on_stall"]["enum"] == ["alert", "restart"]
