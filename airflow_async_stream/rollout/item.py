"""One job's planned action: the plan's unit, carried from the plan step to the apply steps as JSON."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = ["ACTIONS", "CHANGES", "REAL_TIME_FOLLOW_UP", "PlanItem"]

ACTIONS = ("unchanged", "deploy", "retire", "update", "safe_disable", "refuse", "suspend")
#: The actions that bring a new spec to a job: one that failed is not tried again while the spec stays.
CHANGES = frozenset({"deploy", "update", "safe_disable"})


#: Why a job with async on that the folder moves to real-time mode is changed twice.
REAL_TIME_FOLLOW_UP = (
    "the next rollout run restarts it with the real-time trigger (real-time mode refuses async progress "
    "tracking, and the cure needs micro-batches; a query enters real-time mode only by a restart)"
)


@dataclass(frozen=True)
class PlanItem:
    """One job's action, why, and what changed (``field -> {"from": old, "to": new}``)."""

    job: str
    action: str
    reason: str
    diff: dict[str, dict[str, Any]] = field(default_factory=dict)
    checkpoint: str | None = None
    control_url: str | None = None
    desired_spec: dict[str, Any] | None = None
    needs_confirmation: bool = False
    #: For ``update`` and ``safe_disable``: how the change is made (decision/needs.py How), and why.
    how: str | None = None
    how_reason: str | None = None
    #: A job gone from the folder with nothing left to stop: once a rollout applies this item, its fleet
    #: index entry moves to ``gone/`` and later plans no longer list it.
    leaves_plan: bool = False
    #: This very spec failed in an earlier rollout (its record: ``run_id``, ``finished_at``, ``error``).
    failed_before: dict[str, Any] | None = None
    #: Not tried again: the spec is the one that failed (``retry_failed`` asks to try it anyway).
    held_back: bool = False
    #: When the change turns async progress tracking on or changes its interval: the job's report's advice
    #: (insight/advice.py), so the figures for or against the change are read before it is made.
    advice: list[dict[str, Any]] = field(default_factory=list)
    #: A second change this item leaves to the next rollout run (a move to real-time mode after the cure).
    follow_up: str | None = None
    #: With the plan step's ``analyze``: the spec's verdict from a local Spark (driver/analyze.py's
    #: ``Analysis.to_json``: ``ok``, ``problems``, ``not_checked``); None when the job was not analyzed.
    analysis: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PlanItem:
        return cls(**data)
