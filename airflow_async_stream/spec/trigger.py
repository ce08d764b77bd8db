"""A spec's trigger: one kind at most (processing time, once, available now, continuous, real time), its
interval as Spark reads it, and the keyword arguments PySpark's ``trigger`` takes."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from airflow_async_stream.spec.intervals import interval_ms
from airflow_async_stream.spec.strict import StrictModel

__all__ = ["TRIGGER_KINDS", "Trigger"]

#: The trigger kinds a spec may give (one at most); none means Spark's default trigger.
TRIGGER_KINDS = ("processing_time", "once", "available_now", "continuous", "real_time")


class Trigger(StrictModel):
    """Exactly one trigger kind; none given means Spark's default (micro-batches back to back)."""

    processing_time: str | None = Field(default=None, min_length=1, description="e.g. '500 milliseconds'.")
    once: Literal[True] | None = Field(default=None, description="Run one batch and stop.")
    available_now: Literal[True] | None = Field(default=None, description="Drain what is there and stop.")
    continuous: str | None = Field(default=None, min_length=1, description="Continuous processing interval.")
    real_time: str | None = Field(
        default=None, min_length=1, description="Real-time mode (Spark 4.1+): its batch duration, e.g. '5 seconds'."
    )

    @model_validator(mode="after")
    def _at_most_one(self) -> Trigger:
        chosen = [k for k in TRIGGER_KINDS if getattr(self, k)]
        if len(chosen) > 1:
            raise ValueError(f"give one trigger kind, not {' and '.join(chosen)}")
        return self

    @property
    def kind(self) -> str:
        for k in TRIGGER_KINDS[1:]:
            if getattr(self, k):
                return k
        return "processing_time"

    def interval_ms(self) -> int | None:
        """The interval (processing time, continuous) or batch duration (real time) in ms, as Spark reads it
        (IntervalError where Spark would refuse it: a spec's rules report that, spec/rules.py)."""
        text = {
            "processing_time": self.processing_time,
            "continuous": self.continuous,
            "real_time": self.real_time,
        }.get(self.kind)
        return interval_ms(text, positive=self.kind == "real_time") if text else None

    def spark_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for PySpark's ``DataStreamWriter.trigger``; empty means the default trigger."""
        if self.once:
            return {"once": True}
        if self.available_now:
            return {"availableNow": True}
        if self.continuous:
            return {"continuous": self.continuous}
        if self.real_time:
            return {"realTime": self.real_time}
        if self.processing_time:
            return {"processingTime": self.processing_time}
        return {}
