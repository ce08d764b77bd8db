"""The spec's ``restart`` block: what the supervisor does when a job's driver dies (supervise/policy.py).

Like the Flink Kubernetes Operator's ``job.restart.failed`` with its restart threshold in a window, and the
spark-operator's ``restartPolicy: OnFailure`` with its retry interval: a job that dies is redeployed after
``backoff``, doubled at each further restart within ``within`` up to ``max_backoff``; the ``max_restarts``-th
death within ``within`` makes it ``crash_looping``: no more restarts until a person looks.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, StrictInt, field_validator, model_validator

from airflow_async_stream.spec.intervals import interval_ms
from airflow_async_stream.spec.strict import StrictModel

__all__ = ["RESTART_POLICIES", "Restart"]

RESTART_POLICIES = ("on_failure", "never")


def _positive_ms(value: str) -> int:
    ms = interval_ms(value)  # IntervalError (a ValueError) names the text and the form
    if ms <= 0:
        raise ValueError(f"{value!r} must be above 0 ms")
    return ms


class Restart(StrictModel):
    """When and how often the supervisor redeploys a job whose driver died."""

    policy: Literal["on_failure", "never"] = Field(
        default="on_failure", description="on_failure: redeploy a crashed job; never: record it and leave it down."
    )
    max_restarts: StrictInt = Field(
        default=5, ge=1, le=1000, description="This many restarts within `within` make the job crash_looping."
    )
    within: str = Field(default="1 hour", min_length=1, description="The window restarts are counted in.")
    backoff: str = Field(
        default="10 seconds", min_length=1, description="Wait before the first restart; doubled at each next one."
    )
    max_backoff: str = Field(default="10 minutes", min_length=1, description="The longest wait before a restart.")

    @field_validator("within", "backoff", "max_backoff")
    @classmethod
    def _interval(cls, value: str) -> str:
        _positive_ms(value)
        return value

    @model_validator(mode="after")
    def _ordered(self) -> Restart:
        if _positive_ms(self.max_backoff) < _positive_ms(self.backoff):
            raise ValueError(f"max_backoff ({self.max_backoff}) must not be shorter than backoff ({self.backoff})")
        waits = sum(self.backoff_s(n) for n in range(self.max_restarts))
        if self.policy == "on_failure" and self.within_s <= waits:
            raise ValueError(
                f"within ({self.within}) must be longer than the backoffs of max_restarts "
                f"({self.max_restarts}) restarts, {waits:g} s: the job could never be crash_looping"
            )
        return self

    @property
    def within_s(self) -> float:
        return _positive_ms(self.within) / 1000

    def backoff_s(self, restarts_before: int) -> float:
        """The wait before a restart that follows ``restarts_before`` restarts in the window."""
        first, most = _positive_ms(self.backoff) / 1000, _positive_ms(self.max_backoff) / 1000
        return float(min(most, first * 2 ** min(restarts_before, 64)))
