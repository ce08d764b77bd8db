"""The job spec: the single description of a streaming job (its parts: endpoints.py; its rules: rules.py).

The rules here run at DAG parse (operators validate what they are given), before spark-submit, and in the
driver. Spark's own behaviour behind each rule is in SPARK_FACTS.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    Field,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from airflow_async_stream.exceptions import RuleViolationError
from airflow_async_stream.spec.endpoints import (
    OptionValue,
    Sink,
    Source,
    Transform,
    refuse_secret_keys,
    stringify,
)
from airflow_async_stream.spec.health import HealthSpec
from airflow_async_stream.spec.logs import Logs
from airflow_async_stream.spec.paths import checkpoint_folder, one_spelling, python_file
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.spec.rules import rule_violations
from airflow_async_stream.spec.strict import StrictModel
from airflow_async_stream.spec.tracking import AsyncProgress, Autotune
from airflow_async_stream.spec.trigger import Trigger

__all__ = ["AsyncProgress", "JobSpec", "Lineage"]

_NAME_RE = r"^[a-z0-9][a-z0-9_-]{0,62}$"


class Lineage(StrictModel):
    """What the driver tells OpenLineage while the job runs (docs/lineage.md)."""

    running_every_minutes: StrictInt | float | None = Field(
        default=None,
        ge=0,
        description="Emit an OpenLineage RUNNING event this often, with the batches, rows and latency since the "
        "last one; 0 never. Unset: the provider's [async_stream] lineage_running_every_minutes (off by default).",
    )


class JobSpec(StrictModel):
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
    python_dependencies: list[Annotated[str, AfterValidator(python_file)]] = Field(
        default_factory=list, description=".py, .zip or .egg files it imports: shipped with each driver (--py-files)."
    )
    trigger: Trigger = Field(default_factory=Trigger)
    async_progress: AsyncProgress = Field(default_factory=AsyncProgress)
    autotune: Autotune | None = Field(default=None, description="The bounds the tuner keeps to (`auto` fields).")
    delivery: Literal["at_least_once", "exactly_once"] | None = Field(
        default=None,
        description="exactly_once: never async (a failure would re-run batches); at_least_once, the default: allows it.",
    )
    stateful: StrictBool = Field(
        default=False, description="Declare aggregations, dedup, stream-stream joins or *GroupsWithState."
    )
    spark_conf: dict[str, OptionValue] = Field(default_factory=dict, description="Extra --conf entries.")
    logs: Logs | None = Field(default=None, description="Log level, driver log rotation, progress log retention.")
    lineage: Lineage | None = Field(default=None, description="OpenLineage events of the running job.")
    health: HealthSpec | None = Field(
        default=None, description="When a running job counts as stalled, and what the supervisor does then."
    )
    restart: Restart | None = Field(default=None, description="What the supervisor does when its driver dies.")
    state: Literal["running", "suspended"] | None = Field(
        default=None,
        description="running (the default) or suspended: a rollout stops the job gracefully, keeps its checkpoint "
        "and its place in the fleet, and starts it again when this says running.",
    )

    @field_validator("spark_conf")
    @classmethod
    def _no_secret_conf(cls, conf: dict[str, OptionValue]) -> dict[str, OptionValue]:
        return refuse_secret_keys(
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

    @field_validator("checkpoint")
    @classmethod
    def _checkpoint_folder(cls, value: str) -> str:
        return checkpoint_folder(value)

    @field_validator("application")
    @classmethod
    def _absolute_or_url(cls, value: str | None) -> str | None:
        return None if value is None else one_spelling(value)

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
        return {"spark.log.level": self.log_settings.spark_level, **stringify(self.spark_conf)}

    @property
    def log_settings(self) -> Logs:
        """``logs`` as given, or the defaults (a spec without the section keeps its file form unchanged)."""
        return self.logs or Logs()

    @property
    def health_settings(self) -> HealthSpec:
        """``health`` as given, or the defaults."""
        return self.health or HealthSpec()

    @property
    def restart_settings(self) -> Restart:
        """``restart`` as given, or the defaults."""
        return self.restart or Restart()

    @property
    def autotune_settings(self) -> Autotune:
        """``autotune`` as given, or the defaults."""
        return self.autotune or Autotune()

    @property
    def suspended(self) -> bool:
        return self.state == "suspended"

    def writer_options(self) -> dict[str, str]:
        """Every option the runtime sets on the DataStreamWriter, sink options first."""
        opts = self.sink.spark_options() if self.sink else {}
        opts["checkpointLocation"] = self.checkpoint
        opts.update(self.async_progress.spark_options())
        return opts
