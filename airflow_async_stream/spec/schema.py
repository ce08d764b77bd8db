"""The JSON Schema of a job spec file, as strict as the loader wherever JSON Schema can say the rule.

Pydantic's schema of ``JobSpec`` gives the fields and their types; the loader also holds rules that span
fields (model.py's validators, rules.py). Those JSON Schema can express are added here, so an editor or a CI
step that validates with the schema refuses what a deploy refuses: one trigger kind at most; a transform with
exactly one of ``sql`` or ``entrypoint``; ``source`` and ``sink`` unless ``application``, which excludes
``source`` and ``transform``; what async progress tracking refuses (the once, available-now, continuous and
real-time triggers, a sink other than Kafka, console, memory or noop, a stateful query, exactly-once delivery);
``auto`` for the fields the tuner may set; ``connection`` on Kafka
only; option and conf names that look secret; the writer options the spec owns. ``LOADER_ONLY`` names the
rules only the loader checks (``validate`` runs them).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

from airflow_async_stream.spec.endpoints import RESERVED_SINK_OPTIONS
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.rules import ASYNC_SINKS
from airflow_async_stream.spec.secret_options import SECRET_KEY_RE
from airflow_async_stream.spec.tracking import AUTO, TUNABLE
from airflow_async_stream.spec.trigger import TRIGGER_KINDS

__all__ = ["LOADER_ONLY", "spec_json_schema"]

#: What only the loader checks: Spark's own parsing, values that depend on other keys' values, the file itself.
LOADER_ONLY = (
    "a trigger's interval as Spark parses it, and real-time mode's rules",
    "option values Spark checks (numbers, booleans, Kafka offsets, the settings Spark's Kafka source and sink "
    "refuse, a Kafka source's one subscription strategy, a file sink's path, rate-micro-batch's rowsPerBatch)",
    "an option given both in `options` and in `secret_options`",
    "${VAR} interpolation (the schema sees the text before it) and the file's size and nesting bounds",
)

_NOT_ASYNC_TRIGGERS = ("once", "available_now", "continuous", "real_time")


def _ci(pattern: str) -> str:
    """A regular expression matching ``pattern`` in any letter case (JSON Schema's regexes have no flags)."""
    return re.sub(r"[A-Za-z]", lambda m: f"[{m.group().lower()}{m.group().upper()}]", pattern)


def _given(field: str) -> dict[str, Any]:
    """The field is present and not null."""
    return {"required": [field], "properties": {field: {"not": {"type": "null"}}}}


def _absent(field: str) -> dict[str, Any]:
    """The field is missing or null."""
    return {"not": _given(field)}


def _one_word(words: set[str] | frozenset[str]) -> str:
    return "^(" + "|".join(_ci(re.escape(w)) for w in sorted(words)) + ")$"


_SECRET_NAME = {"not": {"pattern": _ci(SECRET_KEY_RE.pattern.removeprefix("(?i)"))}}
_RESERVED_NAME = {"not": {"pattern": _one_word(set(RESERVED_SINK_OPTIONS))}}


def _endpoint_rules(definition: dict[str, Any], sink: bool) -> None:
    kafka = {"properties": {"format": {"pattern": _one_word({"kafka"})}}}
    definition["allOf"] = [{"if": _given("connection"), "then": kafka}]
    options = definition["properties"]["options"]
    options["propertyNames"] = {"allOf": [_SECRET_NAME, _RESERVED_NAME]} if sink else _SECRET_NAME
    if sink:
        definition["properties"]["secret_options"]["propertyNames"] = _RESERVED_NAME


def _job_rules(schema: dict[str, Any]) -> list[dict[str, Any]]:
    without_application = {"allOf": [_given("source"), _given("sink")]}
    with_application = {"allOf": [_absent("source"), _absent("transform")]}
    async_on = {
        "required": ["async_progress"],
        "properties": {"async_progress": {"required": ["enabled"], "properties": {"enabled": {"const": True}}}},
    }
    async_allows = {
        "properties": {
            "trigger": {"allOf": [_absent(kind) for kind in _NOT_ASYNC_TRIGGERS]},
            "sink": {"anyOf": [{"type": "null"}, {"properties": {"format": {"pattern": _one_word(ASYNC_SINKS)}}}]},
            "stateful": {"const": False},
        }
    }
    exactly_once = {"required": ["delivery"], "properties": {"delivery": {"const": "exactly_once"}}}
    return [
        {"if": _absent("application"), "then": without_application, "else": with_application},
        {"if": async_on, "then": async_allows},
        {"if": exactly_once, "then": {"not": async_on}},
    ]


def _delegable(definition: dict[str, Any]) -> None:
    """``enabled`` and ``checkpoint_interval_ms`` may also say ``auto`` (spec/tracking.py)."""
    for name in TUNABLE:
        field = definition["properties"][name]
        kind = {key: field.pop(key) for key in ("type", "minimum") if key in field}
        field["anyOf"] = [kind, {"const": AUTO}]


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema of a job spec file, for editors and CI linters."""
    schema = JobSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "airflow-async-stream job spec"
    defs = schema["$defs"]
    defs["Trigger"]["allOf"] = [
        {"not": {"allOf": [_given(a), _given(b)]}} for a, b in itertools.combinations(TRIGGER_KINDS, 2)
    ]
    defs["Transform"]["oneOf"] = [_given("sql"), _given("entrypoint")]
    _delegable(defs["AsyncProgress"])
    _endpoint_rules(defs["Source"], sink=False)
    _endpoint_rules(defs["Sink"], sink=True)
    schema["properties"]["spark_conf"]["propertyNames"] = _SECRET_NAME
    schema["allOf"] = _job_rules(schema)
    schema["$comment"] = "Checked only by the loader (`airflow-async-stream validate`): " + "; ".join(LOADER_ONLY)
    return schema
