"""A job's latency from its progress log: per deployment and configuration, and what a failure would re-run.

Figures follow the source documents: a micro-batch's latency is ``triggerExecution``; offset management is
``walCommit + commitOffsets`` (seed 004), and its share is judged from synchronous batches only, because with
async progress tracking on those two time only the hand-off to a background thread. Percentiles are by
nearest rank (the value of the ``ceil(q * n)``-th batch in latency order), so every figure is a batch's own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_async_stream.insight.batches import ran_a_batch
from airflow_async_stream.insight.groups import Batch, Group, group_batches, percentile

__all__ = ["Report", "build_report"]


@dataclass
class Report:
    """What ``report`` says of one job; ``to_json()`` is its machine-readable form."""

    job: str | None
    checkpoint: str | None
    since_s: float | None
    batches: list[Batch]
    groups: list[Group]
    durable_offset: int | None = None
    advice: list[dict[str, Any]] = field(default_factory=list)
    #: Events the report could not read (no timestamp, a batch id that is not a number): counted, not fatal.
    skipped: int = 0
    #: What the tuner decided (state/tuning.py's summary), for a job it tunes.
    autotune: dict[str, Any] | None = None

    @property
    def named(self) -> str:
        """How the command line names the job: by name, or else by its checkpoint."""
        return self.job or self.checkpoint or "JOB"

    @property
    def latest(self) -> Group | None:
        return self.groups[-1] if self.groups else None

    def baseline(self) -> list[Batch]:
        """The synchronous batches the offset-management share is judged from: those of the newest synchronous
        configuration (one trigger, one cost), across its deployments."""
        sync = [g for g in self.groups if g.is_async is False]
        if not sync:
            return []
        newest = sync[-1].configuration
        return [b for g in sync if g.configuration == newest for b in g.batches]

    def offset_management(self) -> dict[str, Any] | None:
        """p50 offset management over p50 latency, of the synchronous baseline; None without one."""
        baseline = self.baseline()
        if not baseline:
            return None
        p50 = percentile([b.latency_ms for b in baseline], 50) or 0.0
        om = percentile([b.offset_management_ms for b in baseline], 50) or 0.0
        return {
            "configuration": baseline[-1].configuration,
            "batches": len(baseline),
            "p50_ms": p50,
            "offset_management_ms": om,
            "share": round(om / p50, 3) if p50 else None,
        }

    def at_risk(self) -> dict[str, Any] | None:
        """For an async job: the batches of its newest run after the newest batch in ``offsets/``, and their rows
        (what a failure would re-run now)."""
        latest = self.latest
        if latest is None or not latest.is_async or self.durable_offset is None:
            return None
        run = latest.batches[-1].query_run_id
        final = {b.batch_id: b for b in self.batches if b.query_run_id == run and b.batch_id > self.durable_offset}
        return {
            "durable_batch": self.durable_offset,
            "batches": len(final),
            "rows": sum(b.rows for b in final.values()),
        }

    def state(self) -> dict[str, Any] | None:
        """For a stateful query (seed 003): p50 state-store commit time per task and its share of the batch."""
        stateful = [b for b in self.batches if b.state_commit_ms is not None]
        if not stateful:
            return None
        shares = [b.state_commit_ms / b.latency_ms for b in stateful if b.latency_ms and b.state_commit_ms is not None]
        return {
            "batches": len(stateful),
            "commit_ms_per_task": percentile([b.state_commit_ms or 0.0 for b in stateful], 50),
            "commit_share": round(percentile(shares, 50) or 0.0, 3),
            "rows_in_state": stateful[-1].state_rows,
        }

    def changes(self) -> list[dict[str, Any]]:
        """Where one group ends and the next begins: a switch in place (same deployment) or a new deployment, and the
        stream's pause across it."""
        found = []
        for before, after in zip(self.groups, self.groups[1:], strict=False):
            first, last = after.batches[0], before.batches[-1]
            found.append(
                {
                    "at": first.start,
                    "batch_id": first.batch_id,
                    # idle time: the end of the last batch before to the start of the first after
                    "pause_s": round(first.start - last.start - last.latency_ms / 1000, 3),
                    "kind": "switch" if before.deployment_id == after.deployment_id else "deployment",
                    "from": before.configuration,
                    "to": after.configuration,
                }
            )
        return found

    def to_json(self) -> dict[str, Any]:
        latest = self.latest.figures() if self.latest else {}
        managed = self.offset_management()
        return {
            "job": self.job,
            "checkpoint": self.checkpoint,
            "since_s": self.since_s,
            "batches": len(self.batches),
            "configuration": latest.get("configuration"),
            "p50_ms": latest.get("p50_ms"),
            "p90_ms": latest.get("p90_ms"),
            "p99_ms": latest.get("p99_ms"),
            "rows_per_s": latest.get("rows_per_s"),
            "offset_management_ms": managed["offset_management_ms"] if managed else None,
            "offset_management_share": managed["share"] if managed else None,
            "baseline": managed,
            "groups": [g.figures() for g in self.groups],
            "changes": self.changes(),
            "at_risk": self.at_risk(),
            "state": self.state(),
            "advice": self.advice,
            "autotune": self.autotune,
            "skipped_events": self.skipped,
        }


def build_report(
    events: Iterable[Mapping[str, Any]],
    *,
    job: str | None = None,
    checkpoint: str | None = None,
    since_s: float | None = None,
    now: float | None = None,
    configurations: dict[str, dict[str, Any]] | None = None,
    durable_offset: int | None = None,
) -> Report:
    """The report of the batches that ran in ``events`` (the last ``since_s`` seconds before ``now`` if given).

    ``configurations`` maps deployment ids to their configuration for events that carry none (an
    application's driver builds its query itself); ``durable_offset`` is the newest batch id in ``offsets/``.
    """
    known = configurations or {}
    batches, skipped = [], 0
    for event in events:
        if not ran_a_batch(event):
            continue
        try:
            batches.append(Batch.of(event, known.get(str(event.get("deployment_id")))))
        except (KeyError, TypeError, ValueError):  # a line this release cannot read: say so, read the rest
            skipped += 1
    if since_s is not None and now is not None:
        batches = [b for b in batches if b.start >= now - since_s]
    return Report(job, checkpoint, since_s, batches, group_batches(batches), durable_offset, skipped=skipped)
