"""The spec's ``health`` block: when a running job counts as stalled (the verdict: insight/health.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import Field, field_validator

from airflow_async_stream.spec.intervals import interval_ms
from airflow_async_stream.spec.strict import StrictModel

if TYPE_CHECKING:
    from airflow_async_stream.spec.trigger import Trigger

__all__ = ["BATCH_STALLED_AFTER_MIN_S", "HEALTH_INTERVALS", "NO_BATCH_AFTER_MIN_S", "HealthSpec"]

#: The least a default health limit is, whatever the trigger (seconds): a batch may run this long, and a
#: query with data may start no batch this long, before it counts as stalled.
BATCH_STALLED_AFTER_MIN_S, NO_BATCH_AFTER_MIN_S = 300.0, 120.0
#: Default limits are this many trigger intervals when that is longer than the minimum.
HEALTH_INTERVALS = 10


class HealthSpec(StrictModel):
    """When a running job counts as stalled (insight/health.py); the defaults follow the trigger."""

    batch_stalled_after: str | None = Field(
        default=None,
        min_length=1,
        description="A micro-batch that has run this long is stalled, e.g. '10 minutes'. Default: 10 trigger "
        "intervals, at least 5 minutes.",
    )
    no_batch_after: str | None = Field(
        default=None,
        min_length=1,
        description="A running query whose source is not idle and that has started no batch for this long is "
        "stalled. Default: 10 trigger intervals, at least 2 minutes.",
    )
    on_stall: Literal["alert", "restart"] = Field(
        default="alert",
        description="What the supervisor does about a stalled job: alert (an incident for a person; the driver "
        "runs on) or restart (a graceful stop and a redeploy of its last stable spec, counted like a crash).",
    )

    @field_validator("batch_stalled_after", "no_batch_after")
    @classmethod
    def _interval(cls, value: str | None) -> str | None:
        if value is not None and interval_ms(value) == 0:  # IntervalError (a ValueError) names the text and form
            raise ValueError(f"{value!r} must be above 0 ms")
        return value

    def limits_s(self, trigger: Trigger) -> tuple[float, float]:
        """``(batch_stalled_after, no_batch_after)`` in seconds: as given, else from the trigger's interval."""
        every_s = (trigger.interval_ms() or 0) / 1000 * HEALTH_INTERVALS
        batch = interval_ms(self.batch_stalled_after) / 1000 if self.batch_stalled_after else None
        no_batch = interval_ms(self.no_batch_after) / 1000 if self.no_batch_after else None
        return (
            batch if batch is not None else max(BATCH_STALLED_AFTER_MIN_S, every_s),
            no_batch if no_batch is not None else max(NO_BATCH_AFTER_MIN_S, every_s),
        )
