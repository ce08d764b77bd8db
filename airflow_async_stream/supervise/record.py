"""``supervision.json``: what the supervisor did to a job (its restarts, newest last, capped; a crash loop it
declared; a person's resume), so the watcher, every worker and the next run read the same. Decisions read the
Airflow side's own record (state/ledger.py), so a forged copy in the control area cannot end a crash loop; the
copy there is what the driver (runtime/requery.py) and readers elsewhere see."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_async_stream.state import ledger
from airflow_async_stream.state.typed import Record

if TYPE_CHECKING:
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Grant

__all__ = [
    "KEPT_RESTARTS",
    "Supervision",
    "read_supervision",
    "recorded_supervision",
    "shown_supervision",
    "write_supervision",
]

#: How many of its newest restarts a job keeps (enough for any ``max_restarts`` a window counts).
KEPT_RESTARTS = 1000


@dataclass(frozen=True, kw_only=True)
class Supervision(Record):
    """The supervisor's record of one job."""

    #: Each restart: ``at``, ``answered`` (the deployment that went down), ``verdict``, ``how`` (redeploy,
    #: safe_disable), ``deployment_id`` (the new one, once launched), ``error`` (when it did not come up).
    restarts: list[dict[str, Any]] = field(default_factory=list)
    #: The deployment the supervisor declared crash looping, and when: no more restarts of it.
    crash_looping: str | None = None
    crash_looping_at: float | None = None
    #: When a person resumed the job: restarts before it no longer count against ``max_restarts``.
    resumed_at: float | None = None

    def answered(self, deployment_id: str | None) -> dict[str, Any] | None:
        """The restart that answered ``deployment_id`` going down (None: none did)."""
        return next((r for r in reversed(self.restarts) if r.get("answered") == deployment_id), None)

    def restarts_since(self, since: float) -> list[dict[str, Any]]:
        since = max(since, self.resumed_at or 0.0)
        return [r for r in self.restarts if float(r.get("at") or 0) >= since]

    def counted(self, within_s: float, in_driver: Sequence[float], at: float) -> int:
        """The restarts a window of ``within_s`` holds at ``at``: the supervisor's, and the driver's own of its
        query (status ``query_restarts``); none before a person's resume."""
        since = max(at - within_s, self.resumed_at or 0.0)
        return len(self.restarts_since(since)) + sum(1 for t in in_driver if t >= since)

    def with_restart(self, restart: dict[str, Any]) -> Supervision:
        kept = [r for r in self.restarts if r.get("answered") != restart.get("answered")]
        return self.but(restarts=[*kept, restart][-KEPT_RESTARTS:])


def read_supervision(control: ControlArea) -> Supervision:
    """The supervisor's own record of the job (its ledger); an empty one for a job it never acted on."""
    data = ledger.read(control, ledger.SUPERVISION)
    return (
        Supervision() if data is None else Supervision.from_json(data, str(ledger.folder(control) / ledger.SUPERVISION))
    )


def recorded_supervision(control: ControlArea) -> Supervision:
    """The copy in the control area: what a driver, or a host without the ledger, can read."""
    data = control.read_json(control.SUPERVISION)
    return Supervision() if data is None else Supervision.from_json(data, f"{control.url}/{control.SUPERVISION}")


def shown_supervision(control: ControlArea) -> Supervision:
    """For a reader: the supervisor's own record where this host keeps it, else the control area's copy."""
    return (
        read_supervision(control)
        if ledger.read(control, ledger.SUPERVISION) is not None
        else recorded_supervision(control)
    )


def write_supervision(control: ControlArea, grant: Grant, record: Supervision) -> None:
    """Write it under the job's hold, fenced (a forced stop that ended the hold wins): the ledger, then the copy."""
    with grant.guarded():
        ledger.write(control, ledger.SUPERVISION, record.to_json())
        control.write_json(control.SUPERVISION, record.to_json())
