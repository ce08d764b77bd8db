"""``autotune.json``: the tuner's record of one job (autotune/) (the trial under way, when the last began, every decision,
newest last and capped), so every worker, the next run, ``report`` and the page read the same."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_async_stream.state.typed import Record

if TYPE_CHECKING:
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Grant

__all__ = ["AUTOTUNE", "KEPT_DECISIONS", "Trial", "Tuning", "read_tuning", "write_tuning"]

AUTOTUNE = "autotune.json"
#: How many of its newest decisions a job keeps.
KEPT_DECISIONS = 200


@dataclass(frozen=True, kw_only=True)
class Trial(Record):
    """A change the tuner made and is measuring: ``kind`` ``on`` (async turned on), ``interval`` (a new
    checkpoint interval) or ``sample`` (async turned off through the migration to measure a baseline)."""

    kind: str
    at: float
    deployment_id: str
    #: The query's configuration before the change and the one the tuner set (a different one running now
    #: means a person or a rollout changed the job meanwhile).
    before: dict[str, Any]
    configuration: dict[str, Any]
    #: The synchronous window it is judged against (none yet for a sample), and the async window before an
    #: interval change.
    baseline: dict[str, Any] | None = None
    previous: dict[str, Any] | None = None
    reason: str = ""
    #: Changes made since the trial began (a switch, a migration): the trial's cost in pauses.
    changes: int = 1
    #: The query the tuner's change started: another one running means the job was switched (or its query
    #: restarted) meanwhile, and the window would measure something else.
    query_run_id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Tuning(Record):
    """The tuner's record of one job."""

    trial: Trial | None = None
    #: When the newest trial began: the next waits ``autotune.at_most_every`` from it.
    last_trial_at: float | None = None
    #: The spec (its async options aside) async was reverted under: not tried again until it changes.
    reverted_under: str | None = None
    #: Each decision: ``at``, ``act``, ``reason``, ``from`` and ``to`` (the async options), ``before`` and
    #: ``after`` (measured windows), ``saving`` (p50, against synchronous).
    decisions: list[dict[str, Any]] = field(default_factory=list)

    def with_decision(self, decision: dict[str, Any]) -> Tuning:
        return self.but(decisions=[*self.decisions, decision][-KEPT_DECISIONS:])

    @property
    def last(self) -> dict[str, Any] | None:
        return self.decisions[-1] if self.decisions else None

    def summary(self, newest: int = 10) -> dict[str, Any] | None:
        """What ``report`` and the page say of the tuner (None when it never decided anything): the newest
        measured decision (the configuration it settled on against the synchronous baseline), the trial under
        way, the switches it made in all, its newest decisions."""
        if not self.decisions and self.trial is None:
            return None
        measured = next((d for d in reversed(self.decisions) if d.get("before") or d.get("after")), None)
        return {
            "trial": self.trial.kind if self.trial else None,
            "last": self.last,
            "measured": measured,
            "switches": sum(int(d.get("switches") or 0) for d in self.decisions),
            "decisions": self.decisions[-newest:],
        }


def read_tuning(control: ControlArea) -> Tuning:
    """The job's record; an empty one for a job the tuner never looked at."""
    data = control.read_json(AUTOTUNE)
    return Tuning() if data is None else Tuning.from_json(data, f"{control.url}/{AUTOTUNE}")


def write_tuning(control: ControlArea, grant: Grant, record: Tuning) -> None:
    """Write it under the job's hold, fenced: a forced stop that ended the hold wins."""
    with grant.guarded():
        control.write_json(AUTOTUNE, record.to_json())
