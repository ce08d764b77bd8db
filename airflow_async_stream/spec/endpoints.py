"""Where a job reads and writes: the source, the transform and the sink, with the rules of their options
(a secret never written in a spec, the writer options the spec owns), and the strict model every part shares."""

from __future__ import annotations

import re
from typing import Any, Literal

from pydantic import (
    ConfigDict,
    Field,
    field_validator,
    model_validator,
)

from airflow_async_stream.exceptions import RuleViolationError
from airflow_async_stream.spec.secret_options import looks_secret
from airflow_async_stream.spec.strict import StrictModel

__all__ = [
    "RESERVED_SINK_OPTIONS",
    "OptionValue",
    "Sink",
    "Source",
    "StrictModel",
    "Transform",
    "refuse_secret_keys",
    "stringify",
]

#: Writer options the spec owns; setting them by hand in ``sink.options`` would bypass the rules.
RESERVED_SINK_OPTIONS = {
    "checkpointlocation": "checkpoint",
    "asyncprogresstrackingenabled": "async_progress.enabled",
    "asyncprogresstrackingcheckpointintervalms": "async_progress.checkpoint_interval_ms",
    "_asyncprogresstrackingoverridesinksupportcheck": "async_progress (Spark's testing switch is not offered)",
}

_CONN_ID_RE = r"^[A-Za-z0-9_.-]{1,250}$"
_ENTRYPOINT_RE = r"^[A-Za-z_][\w.]*:[A-Za-z_]\w*$"


OptionValue = str | int | float | bool


def stringify(options: dict[str, OptionValue]) -> dict[str, str]:
    """Spark options are strings; YAML gives numbers and booleans, rendered the way Spark parses them."""
    return {k: (str(v).lower() if isinstance(v, bool) else str(v)) for k, v in options.items()}


def refuse_secret_keys(mapping: dict[str, OptionValue], remedy: str, what: str = "") -> dict[str, OptionValue]:
    """Secrets never live in a spec file: refuse keys that look like one (naming the key, never the value)."""
    for key in mapping:
        if looks_secret(key):
            raise ValueError(f"{what}{key!r} looks secret and may not be written in a spec: {remedy}")
    return mapping


class _Endpoint(StrictModel):
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
        return refuse_secret_keys(
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
        return stringify(self.options)


class Source(_Endpoint):
    """Where the stream reads from: any format ``spark.readStream.format(...)`` knows."""

    format: str = Field(min_length=1, description="Spark source format, e.g. rate, kafka, parquet.")
    options: dict[str, OptionValue] = Field(default_factory=dict, description="readStream options.")
    schema_ddl: str | None = Field(
        default=None, alias="schema", description="DDL schema for file sources, e.g. 'id INT, name STRING'."
    )

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class Transform(StrictModel):
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
            owner = RESERVED_SINK_OPTIONS.get(key.lower())
            if owner:
                raise ValueError(f"option {key!r} is set by the spec field {owner}, not in sink.options")
        return options
