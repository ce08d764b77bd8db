"""The job spec: the single description of a streaming job, and every rule Spark would enforce late.

The rules here run at DAG parse (operators validate what they are given), before spark-submit, and in the
driver. Spark's own behaviour behind each rule is in SPARK_FACTS.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    ValidationError,
    field_validator,
    model_validator,
)

from airflow_async_stream.driver import log as driver_log
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.interpolation import expand_environment
from airflow_async_stream.spec.secret_options import looks_secret
from airflow_async_stream.state import progress_log

__all__ = [
    "ASYNC_SINKS",
    "JobSpec",
    "AsyncProgress",
    "Source",
    "Sink",
    "Transform",
    "Trigger",
    "Logs",
    "load_spec",
    "read_spec_file",
    "parse_spec",
    "spec_json_schema",
    "resolve_spec",
    "is_templated",
    "spec_operand",
    "deep_merge",
]

#: Sinks Spark allows with async progress tracking (by ``format`` name); only Kafka is a production sink.
ASYNC_SINKS = frozenset({"kafka", "console", "memory", "noop"})

#: Writer options the spec owns; setting them by hand in ``sink.options`` would bypass the rules.
_RESERVED_SINK_OPTIONS = {
    "checkpointlocation": "checkpoint",
    "asyncprogresstrackingenabled": "async_progress.enabled",
    "asyncprogresstrackingcheckpointintervalms": "async_progress.checkpoint_interval_ms",
    "_asyncprogresstrackingoverridesinksupportcheck": "async_progress (Spark's testing switch is not offered)",
}

_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,62}$"
_CONN_ID_RE = r"^[A-Za-z0-9_.-]{1,250}$"
_ENTRYPOINT_RE = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"
_URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


OptionValue = str | int | float | bool


def _stringify(options: dict[str, OptionValue]) -> dict[str, str]:
    """Spark options are strings; YAML gives numbers and booleans, rendered the way Spark parses them."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items()}


def _refuse_secret_keys(mapping: dict[str, OptionValue], remedy: str, what: str = "") -> dict[str, OptionValue]:
    """Secrets never live in a spec file: refuse keys that look like one (naming the key, never the value)."""
    for key in mapping:
        if looks_secret(key):
            raise ValueError(f"{what}{key!r} looks secret and may not be written in a spec: {remedy}")
    return mapping


class _Endpoint(_Model):
    """What sources and sinks share: plain options, and secrets named by Airflow connection, never given."""

    format: str = Field(min_length=1)
    options: dict[str, OptionValue] = Field(default_factory=dict)
    connection: str | None = Field(
        default=None,
        pattern=_CONN_ID_RE,
        description="Airflow connection holding the Kafka settings and SASL credentials (kafka format only).",
    )
    secret_options: dict[str, str] = Field(
        default_factory=dict,
        description="Option name -> Airflow connection whose password is that option's value.",
    )

    @field_validator("options")
    @classmethod
    def _no_secret_values(cls, options: dict[str, OptionValue]) -> dict[str, OptionValue]:
        return _refuse_secret_keys(
            options,
            "name the Airflow connection that holds it in `secret_options` (or `connection` for Kafka security "
            "settings)",
            "option ",
        )

    @field_validator("secret_options")
    @classmethod
    def _connection_ids(cls, secret_options: dict[str, str]) -> dict[str, str]:
        for key, conn_id in secret_options.items():
            if not re.fullmatch(_CONN_ID_RE, conn_id):
                raise ValueError(f"option {key!r}: {conn_id!r} is not an Airflow connection id")
        return secret_options

    @model_validator(mode="after")
    def _secret_sources(self) -> _Endpoint:
        problems = []
        if self.connection is not None and self.format.lower() != "kafka":
            problems.append(("connection", f"carries Kafka settings; format {self.format!r} takes none"))
        problems += [
            (f"secret_options.{key}", "is also given in `options`; give it in one place")
            for key in sorted(set(self.options) & set(self.secret_options))
        ]
        if problems:
            raise RuleViolationError(problems)
        return self

    def spark_options(self) -> dict[str, str]:
        return _stringify(self.options)


class Source(_Endpoint):
    """Where the stream reads from: any format ``spark.readStream.format(...)`` knows."""

    format: str = Field(min_length=1, description="Spark source format, e.g. rate, kafka, parquet.")
    options: dict[str, OptionValue] = Field(default_factory=dict, description="readStream options.")
    schema_ddl: str | None = Field(
        default=None, alias="schema", description="DDL schema for file sources, e.g. 'id INT, name STRING'."
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Transform(_Model):
    """Optional step between source and sink: SQL over the view ``source``, or a Python function."""

    sql: str | None = Field(default=None, min_length=1, description="SQL over the temporary view `source`.")
    entrypoint: str | None = Field(
        default=None,
        pattern=_ENTRYPOINT_RE,
        description="'module:function'; build(spark, source_df) returns a streaming DataFrame.",
    )

    @model_validator(mode="after")
    def _exactly_one(self) -> Transform:
        if (self.sql is None) == (self.entrypoint is None):
            raise ValueError("give exactly one of `sql` or `entrypoint`")
        return self


class Sink(_Endpoint):
    """Where the stream writes to: any format ``writeStream.format(...)`` knows."""

    format: str = Field(min_length=1, description="Spark sink format: kafka, console, memory, noop, ...")
    options: dict[str, OptionValue] = Field(default_factory=dict, description="writeStream options.")
    output_mode: Literal["append", "update", "complete"] | None = Field(
        default=None, description="Spark output mode; Spark's default (append) when unset."
    )

    @field_validator("options", "secret_options")
    @classmethod
    def _no_reserved_options(cls, options: dict[str, Any]) -> dict[str, Any]:
        for key in options:
            owner = _RESERVED_SINK_OPTIONS.get(key.lower())
            if owner:
                raise ValueError(f"option {key!r} is set by the spec field {owner}, not in sink.options")
        return options


class Trigger(_Model):
    """Exactly one trigger kind; none given means Spark's default (micro-batches back to back)."""

    processing_time: str | None = Field(default=None, min_length=1, description="e.g. '500 milliseconds'.")
    once: Literal[True] | None = Field(default=None, description="Run one batch and stop.")
    available_now: Literal[True] | None = Field(default=None, description="Drain what is there and stop.")
    continuous: str | None = Field(default=None, min_length=1, description="Continuous processing interval.")

    @model_validator(mode="after")
    def _at_most_one(self) -> Trigger:
        chosen = [k for k in ("processing_time", "once", "available_now", "continuous") if getattr(self, k)]
        if len(chosen) > 1:
            raise ValueError(f"give one trigger kind, not {' and '.join(chosen)}")
        return self

    @property
    def kind(self) -> str:
        for k in ("once", "available_now", "continuous"):
            if getattr(self, k):
                return k
        return "processing_time"

    def spark_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for PySpark's ``DataStreamWriter.trigger``; empty means the default trigger."""
        if self.once:
            return {"once": True}
        if self.available_now:
            return {"availableNow": True}
        if self.continuous:
            return {"continuous": self.continuous}
        if self.processing_time:
            return {"processingTime": self.processing_time}
        return {}


class AsyncProgress(_Model):
    """Spark's asynchronous progress tracking writer options."""

    enabled: StrictBool = Field(default=False, description="asyncProgressTrackingEnabled.")
    checkpoint_interval_ms: StrictInt = Field(
        default=1000,
        ge=0,
        description="asyncProgressTrackingCheckpointIntervalMs; 0 writes offsets and commits every batch.",
    )

    def spark_options(self) -> dict[str, str]:
        if not self.enabled:
            return {}
        return {
            "asyncProgressTrackingEnabled": "true",
            "asyncProgressTrackingCheckpointIntervalMs": str(self.checkpoint_interval_ms),
        }


SPARK_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


class Logs(_Model):
    """What a job may keep of its logs: Spark's log level, the driver log's rotation, the progress log's retention.

    With the defaults a job's control area holds at most ``driver_log_files * driver_log_max_bytes`` of driver
    log and ``1.25 * progress_max_bytes`` of progress log, however long it runs.
    """

    spark_level: str = Field(
        default="WARN", description="Spark's log level in the driver (at INFO Spark writes ~9 KB per micro-batch)."
    )
    driver_log_max_bytes: StrictInt = Field(
        default=driver_log.DEFAULT_FILE_BYTES,
        ge=4096,
        description="The driver log is rotated when a file would grow past this size.",
    )
    driver_log_files: StrictInt = Field(
        default=driver_log.DEFAULT_FILES,
        ge=1,
        le=100,
        description="Driver log files kept: driver.log, driver.log.1, ... (oldest dropped).",
    )
    progress_max_bytes: StrictInt = Field(
        default=progress_log.DEFAULT_MAX_BYTES,
        ge=4096,
        description="Whole progress segments beyond this size are removed, oldest first.",
    )
    progress_max_age_hours: StrictInt | float = Field(
        default=progress_log.DEFAULT_MAX_AGE_HOURS,
        gt=0,
        description="Progress segments whose batches are all older than this are removed.",
    )

    @field_validator("spark_level", mode="before")
    @classmethod
    def _known_level(cls, value: Any) -> Any:
        if isinstance(value, str) and value.upper() in SPARK_LOG_LEVELS:
            return value.upper()
        raise ValueError(f"must be one of {', '.join(SPARK_LOG_LEVELS)}, got {value!r}")


class JobSpec(_Model):
    """One streaming job: what it reads, how it transforms, where it writes, and how progress is tracked."""

    name: str = Field(
        description="Job name: a-z 0-9 - _, unique per deployment.", json_schema_extra={"pattern": _NAME_RE}
    )
    checkpoint: str = Field(min_length=1, description="Absolute local path or fsspec URL of the checkpoint.")
    source: Source | None = Field(default=None, description="Required unless `application` is given.")
    transform: Transform | None = None
    sink: Sink | None = Field(default=None, description="Required unless `application` is given.")
    application: str | None = Field(
        default=None,
        min_length=1,
        description="Your own PySpark file that hands its DataStreamWriter to airflow_async_stream.runtime.govern.",
    )
    trigger: Trigger = Field(default_factory=Trigger)
    async_progress: AsyncProgress = Field(default_factory=AsyncProgress)
    stateful: StrictBool = Field(
        default=False, description="Declare aggregations, dedup, stream-stream joins or *GroupsWithState."
    )
    spark_conf: dict[str, OptionValue] = Field(default_factory=dict, description="Extra --conf entries.")
    logs: Logs | None = Field(default=None, description="Log level, driver log rotation, progress log retention.")

    @field_validator("spark_conf")
    @classmethod
    def _no_secret_conf(cls, conf: dict[str, OptionValue]) -> dict[str, OptionValue]:
        return _refuse_secret_keys(
            conf,
            "it would reach spark-submit's command line; keep it in the cluster's spark-defaults.conf or a "
            "Hadoop credential provider",
        )

    @field_validator("name")
    @classmethod
    def _safe_name(cls, value: str) -> str:
        if not re.fullmatch(_NAME_RE, value):
            raise ValueError(
                f"must be 1-63 characters of a-z, 0-9, '-' or '_', starting with a letter or digit; got {value!r}"
            )
        return value

    @field_validator("checkpoint", "application")
    @classmethod
    def _absolute_or_url(cls, value: str | None) -> str | None:
        if value is None or _URL_RE.match(value):
            return value
        if not Path(value).is_absolute():
            raise ValueError(f"must be an absolute path or a URL, got {value!r}")
        return value.rstrip("/") or "/"

    @model_validator(mode="after")
    def _spark_rules(self) -> JobSpec:
        problems = rule_violations(self)
        if problems:
            raise RuleViolationError(problems)
        return self

    def to_mapping(self) -> dict[str, Any]:
        """The spec as plain JSON values, in the file format (what Airflow can template and serialize)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json_bytes(self) -> bytes:
        """The spec as ``spec.json`` holds it (its digest is what the driver checks at start)."""
        return self.model_dump_json(by_alias=True, exclude_none=True, indent=2).encode()

    def spark_conf_strings(self) -> dict[str, str]:
        """The spec's ``--conf`` entries: Spark's log level from ``logs`` unless ``spark_conf`` sets its own."""
        return {"spark.log.level": self.log_settings.spark_level, **_stringify(self.spark_conf)}

    @property
    def log_settings(self) -> Logs:
        """``logs`` as given, or the defaults (a spec without the section keeps its file form unchanged)."""
        return self.logs or Logs()

    def writer_options(self) -> dict[str, str]:
        """Every option the runtime sets on the DataStreamWriter, sink options first."""
        opts = self.sink.spark_options() if self.sink else {}
        opts["checkpointLocation"] = self.checkpoint
        opts.update(self.async_progress.spark_options())
        return opts


class RuleViolationError(ValueError):
    """Cross-field rule failures, each with the field it concerns (carried through pydantic's error)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{f}: {r}" for f, r in problems))


def rule_violations(spec: JobSpec) -> list[tuple[str, str]]:
    """The rules that span fields, as ``(field, reason)``; empty when the spec is acceptable."""
    problems: list[tuple[str, str]] = []
    if spec.application is None:
        for field in ("source", "sink"):
            if getattr(spec, field) is None:
                problems.append((field, "is required unless `application` names your own PySpark file"))
    elif spec.source is not None or spec.transform is not None:
        problems.append(("application", "builds its own query: drop `source` and `transform`"))
    if not spec.async_progress.enabled:
        return problems
    kind = spec.trigger.kind
    if kind in ("once", "available_now"):
        problems.append(
            (
                f"trigger.{kind}",
                f"async progress tracking cannot be used with the {kind} trigger "
                "(Spark fails the query at start); use processing_time or turn async_progress.enabled off",
            )
        )
    if kind == "continuous":
        problems.append(
            (
                "trigger.continuous",
                "Spark silently ignores async progress tracking with a continuous trigger; "
                "use processing_time or turn async_progress.enabled off",
            )
        )
    if spec.sink is not None and spec.sink.format.lower() not in ASYNC_SINKS:
        problems.append(
            (
                "sink.format",
                f"sink {spec.sink.format!r} does not support async progress tracking "
                f"(Spark allows only {', '.join(sorted(ASYNC_SINKS))})",
            )
        )
    if spec.stateful:
        problems.append(
            (
                "stateful",
                "async progress tracking works only on stateless queries "
                "(Spark fails a stateful query at its first batch)",
            )
        )
    return problems


def _field_of(error: Any) -> list[tuple[str, str]]:
    """Turn one pydantic error into ``(field, reason)`` pairs, keeping our rule fields."""
    ctx_error = (error.get("ctx") or {}).get("error")
    prefix = ".".join(str(p) for p in error["loc"])
    if isinstance(ctx_error, RuleViolationError):
        return [(f"{prefix}.{f}" if prefix else f, r) for f, r in ctx_error.problems]
    if isinstance(ctx_error, ValueError):
        return [(prefix or "(spec)", str(ctx_error))]
    reason = error["msg"]
    if error["type"] == "extra_forbidden":
        reason = "unknown key (check the spelling; unknown keys are refused)"
    elif error["type"] == "missing":
        reason = "is required"
    elif _may_echo(error):
        shown = repr(error["input"])
        reason = f"{reason} (got {shown if len(shown) <= 60 else shown[:57] + '...'})"
    return [(prefix or "(spec)", reason)]


def _may_echo(error: Any) -> bool:
    """Echo a bad scalar back to the user, but never an option value: options may carry secrets."""
    loc = error["loc"]
    return (
        "input" in error
        and isinstance(error["input"], (str, int, float, bool))
        and not any(part in ("options", "spark_conf") for part in loc)
    )


def parse_spec(data: Any, source: str | None = None) -> JobSpec:
    """Validate a mapping (or a JobSpec) into a JobSpec, or raise SpecError naming each bad field."""
    if isinstance(data, JobSpec):
        return data
    if not isinstance(data, dict):
        raise SpecError([("(spec)", f"must be a mapping of fields, got {type(data).__name__}")], source)
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        problems = [pair for err in exc.errors() for pair in _field_of(err)]
        raise SpecError(problems, source) from None


def load_spec(path: str | Path) -> JobSpec:
    """Read a YAML or JSON spec file and validate it."""
    return parse_spec(read_spec_file(path), str(path))


def read_spec_file(path: str | Path) -> Any:
    """The data of a YAML or JSON spec file, its ``${VAR}`` references expanded (interpolation.py), not yet
    validated; SpecError when it cannot be read or parsed, or names a variable that is not set."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SpecError([("(file)", f"cannot be read: {exc.strerror or exc}")], str(path)) from None
    except UnicodeDecodeError:
        raise SpecError([("(file)", "is not UTF-8 text")], str(path)) from None
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (yaml.YAMLError, json.JSONDecodeError) as exc:
        raise SpecError(
            [("(file)", f"is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}")], str(path)
        ) from None
    if data is None:
        raise SpecError([("(file)", "is empty")], str(path))
    data, problems = expand_environment(data)
    if problems:
        raise SpecError(problems, str(path))
    return data


def spec_json_schema() -> dict[str, Any]:
    """The JSON Schema of a job spec file, for editors and CI linters."""
    schema = JobSpec.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "airflow-async-stream job spec"
    return schema


SpecInput = JobSpec | dict[str, Any] | str | Path


def deep_merge(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """``base`` with ``changes`` merged in key by key (nested mappings merge, other values replace)."""
    merged = dict(base)
    for key, value in changes.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


def resolve_spec(value: SpecInput, overrides: dict[str, Any] | None = None) -> JobSpec:
    """A JobSpec from what a DAG author gives: a JobSpec, a mapping, or a YAML/JSON file path.

    ``overrides`` are merged into the spec key by key (e.g. ``{"async_progress": {"enabled": False}}``)
    before validation, so the rules judge the spec that will actually run.
    """
    if isinstance(value, (str, Path)):
        spec = load_spec(value)
        source = str(value)
    elif isinstance(value, JobSpec):
        spec, source = value, None
    else:
        return parse_spec(deep_merge(value, overrides or {}) if isinstance(value, dict) else value)
    if not overrides:
        return spec
    return parse_spec(deep_merge(spec.to_mapping(), overrides), source)


def spec_operand(spec: SpecInput) -> Any:
    """What an operator stores for a spec argument: a mapping or a path string, so Airflow can template it."""
    if isinstance(spec, JobSpec):
        return spec.to_mapping()
    if isinstance(spec, Path):
        return str(spec)
    return spec


def is_templated(value: Any) -> bool:
    """True when a value still holds Jinja to be rendered at run time (so it cannot be judged at parse)."""
    if isinstance(value, str):
        return "{{" in value or "{%" in value
    if isinstance(value, dict):
        return any(is_templated(k) or is_templated(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(is_templated(v) for v in value)
    return False
