"""How a job tracks its progress: Spark's async progress tracking options, which of them the tuner sets
(``auto``), the tuner's bounds (``autotune``) and the delivery the job promises (``delivery``).

A file writes ``enabled: auto`` or ``checkpoint_interval_ms: auto`` to delegate the field to the tuner
(autotune/). The spec then holds the value in effect (at first synchronous, 1000 ms) and names the delegated
fields in ``auto``, so the driver and every reader see a plain value, and a rollout keeps what the tuner set
(:func:`carry_tuned`); a value the file pins wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, StrictBool, StrictFloat, StrictInt, field_validator, model_validator

from airflow_async_stream.spec.intervals import interval_ms
from airflow_async_stream.spec.strict import StrictModel

__all__ = ["AUTO", "DELIVERIES", "TUNABLE", "AsyncProgress", "Autotune", "carry_tuned"]

#: The word a file writes for a value the tuner sets.
AUTO = "auto"
#: The async progress fields the tuner may set, in the order they are listed.
TUNABLE = ("enabled", "checkpoint_interval_ms")
DELIVERIES = ("at_least_once", "exactly_once")
Tunable = Literal["enabled", "checkpoint_interval_ms"]


class AsyncProgress(StrictModel):
    """Spark's asynchronous progress tracking writer options, and which of them the tuner sets."""

    enabled: StrictBool = Field(
        default=False, description="asyncProgressTrackingEnabled; `auto`: the tuner turns it on and off."
    )
    checkpoint_interval_ms: StrictInt = Field(
        default=1000,
        ge=0,
        description="asyncProgressTrackingCheckpointIntervalMs; 0 writes offsets and commits every batch; `auto`: "
        "the tuner sets it.",
    )
    auto: list[Tunable] | None = Field(
        default=None,
        description="The fields the tuner sets (a file writes `auto` as their value); beside each, the value in "
        "effect now.",
    )

    @model_validator(mode="before")
    @classmethod
    def _delegated(cls, data: Any) -> Any:
        """``enabled: auto`` and ``checkpoint_interval_ms: auto`` become the default value and an ``auto`` entry."""
        if not isinstance(data, Mapping):
            return data
        named = [key for key in TUNABLE if data.get(key) == AUTO]
        listed = data.get("auto")
        if not named or not (listed is None or isinstance(listed, list)):
            return data
        return {key: value for key, value in data.items() if key not in named} | {"auto": [*(listed or []), *named]}

    @field_validator("auto")
    @classmethod
    def _each_once(cls, value: list[str] | None) -> list[str] | None:
        """Each field once, in a fixed order; none is the same as no ``auto`` (so specs compare equal)."""
        chosen = [key for key in TUNABLE if key in (value or ())]
        return chosen or None

    def delegated(self, field: str) -> bool:
        """Whether the tuner sets ``field``."""
        return field in (self.auto or ())

    def in_effect(self) -> dict[str, Any]:
        """The values the query runs with, as deployment records and each batch's configuration hold them."""
        return {"enabled": self.enabled, "checkpoint_interval_ms": self.checkpoint_interval_ms}

    def spark_options(self) -> dict[str, str]:
        if not self.enabled:
            return {}
        return {
            "asyncProgressTrackingEnabled": "true",
            "asyncProgressTrackingCheckpointIntervalMs": str(self.checkpoint_interval_ms),
        }


class Autotune(StrictModel):
    """The bounds the tuner keeps to (autotune/; its loop: docs/runtime.md "Letting it tune itself")."""

    max_rerun_seconds: StrictInt | StrictFloat = Field(
        default=10,
        gt=0,
        le=3600,
        description="The most input, in seconds of the job's input, a failure may re-run: the tuner never sets "
        "a checkpoint interval above it.",
    )
    min_saving: StrictInt | StrictFloat = Field(
        default=0.15,
        gt=0,
        lt=1,
        description="The share of synchronous p50 latency async must save, predicted to try it and measured to "
        "keep it; under it the tuner turns async off again through the safe-disable migration.",
    )
    measure_batches: StrictInt = Field(
        default=20, ge=5, le=1000, description="Batches measured before and after each change (startup batches apart)."
    )
    at_most_every: str = Field(
        default="1 hour",
        min_length=1,
        description="The least time between two of the tuner's trials on one job; a trial's own revert follows "
        "its measurement at once.",
    )

    @field_validator("at_most_every")
    @classmethod
    def _interval(cls, value: str) -> str:
        interval_ms(value)  # IntervalError (a ValueError) names the text and the form
        return value

    def at_most_every_s(self) -> float:
        return interval_ms(self.at_most_every) / 1000


def carry_tuned(desired: Mapping[str, Any], deployed: Mapping[str, Any] | None) -> dict[str, Any]:
    """``desired`` (a spec mapping) with the deployed value of each field it delegates to the tuner: what a
    rollout makes the job run, so it never reverts the tuner. A pinned field keeps the desired value."""
    wanted = dict(desired.get("async_progress") or {})
    running = (deployed or {}).get("async_progress") or {}
    carried = {key: running[key] for key in wanted.get("auto") or () if key in running}
    if not carried:
        return dict(desired)
    return {**desired, "async_progress": wanted | carried}
