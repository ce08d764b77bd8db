"""A job's batches as the report groups them: each batch's figures, runs of one deployment and configuration,
and a group's percentiles. Percentiles are by nearest rank (the value of the ``ceil(q * n)``-th batch in latency
order), so every figure is a batch's own; each batch id counts once and a query start's first batch stays out
of them (Group.runs)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from airflow_async_stream.insight.batches import batch_window

__all__ = ["Batch", "Group", "configuration_key", "describe", "group_batches", "is_async", "percentile"]


def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank ``q``-th percentile (0 < q <= 100); None of nothing."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(1, math.ceil(q / 100 * len(ordered))) - 1]


def is_async(configuration: dict[str, Any] | None) -> bool | None:
    """Whether a recorded configuration had async progress tracking on; None when it is not known."""
    if not configuration:
        return None
    return bool((configuration.get("async_progress") or {}).get("enabled"))


def describe(configuration: dict[str, Any] | None) -> str:
    """A configuration in a few words: ``async 3000 ms, trigger 100 milliseconds``."""
    if not configuration:
        return "configuration not recorded"
    progress = configuration.get("async_progress") or {}
    mode = f"async {progress.get('checkpoint_interval_ms', 1000)} ms" if progress.get("enabled") else "sync"
    trigger = configuration.get("trigger") or {}
    if trigger.get("processing_time"):
        return f"{mode}, trigger {trigger['processing_time']}"
    kinds = [k.replace("_", " ") + ("" if v is True else f" {v}") for k, v in sorted(trigger.items()) if v]
    return f"{mode}, trigger {', '.join(kinds) or 'as fast as possible'}"


@dataclass(frozen=True)
class Batch:
    """One micro-batch that ran, as the report needs it."""

    deployment_id: str
    query_run_id: str
    batch_id: int
    start: float
    latency_ms: float
    offset_management_ms: float
    rows: int
    configuration: dict[str, Any] | None
    #: Per state operator: commit time over all tasks divided by the tasks (seed 003), summed; None if stateless.
    state_commit_ms: float | None = None
    state_rows: int | None = None

    @classmethod
    def of(cls, event: Mapping[str, Any], configuration: dict[str, Any] | None) -> Batch:
        durations = event.get("duration_ms") or {}
        state = event.get("state_operators") or None
        return cls(
            deployment_id=str(event.get("deployment_id") or "-"),
            query_run_id=str(event.get("query_run_id") or "-"),
            batch_id=int(event["batch_id"]),
            start=batch_window(event)[0],
            latency_ms=float(durations.get("triggerExecution", 0)),
            offset_management_ms=float(durations.get("walCommit", 0)) + float(durations.get("commitOffsets", 0)),
            rows=int(event.get("num_input_rows") or 0),
            configuration=event.get("configuration") or configuration,
            state_commit_ms=sum(op["commit_ms"] / max(1, op["shuffle_partitions"]) for op in state) if state else None,
            state_rows=sum(op["rows_total"] for op in state) if state else None,
        )


@dataclass
class Group:
    """Consecutive batches of one deployment under one configuration."""

    deployment_id: str
    configuration: dict[str, Any] | None
    batches: list[Batch] = field(default_factory=list)

    @property
    def is_async(self) -> bool | None:
        return is_async(self.configuration)

    def runs(self) -> tuple[list[Batch], int, list[Batch]]:
        """Each batch id once (its last run: Spark runs a batch again when a query restarts over batches async
        mode never made durable), how many runs were such re-runs, and the startup batches: the first batch
        of each query start (a 1-3 s batch beside steady ones of tens of ms), left out of the percentiles."""
        last: dict[int, Batch] = {}
        first_of_run: dict[str, Batch] = {}
        for batch in self.batches:
            last[batch.batch_id] = batch
            first_of_run.setdefault(batch.query_run_id, batch)
        unique = sorted(last.values(), key=lambda b: (b.start, b.batch_id))
        startup = [b for b in unique if first_of_run.get(b.query_run_id) is b]
        return unique, len(self.batches) - len(unique), startup

    def figures(self) -> dict[str, Any]:
        unique, re_runs, startup = self.runs()
        steady = [b for b in unique if not any(b is s for s in startup)] or unique
        latencies = [b.latency_ms for b in steady]
        managed = [b.offset_management_ms for b in steady]
        first, last = unique[0], unique[-1]
        p50, om = percentile(latencies, 50), percentile(managed, 50)
        # A batch's rows came in since the batch before began: the first batch's rows are the time before it.
        span = last.start - first.start
        rows_per_s = round(sum(b.rows for b in unique[1:]) / span, 1) if len(unique) > 1 and span > 0 else None
        return {
            "deployment_id": self.deployment_id,
            "configuration": self.configuration,
            "async": self.is_async,
            "first_batch": min(b.batch_id for b in unique),
            "last_batch": max(b.batch_id for b in unique),
            "started": first.start,
            "ended": max(b.start + b.latency_ms / 1000 for b in unique),
            "batches": len(unique),
            "re_runs": re_runs,
            "startup_batches": len(unique) - len(steady),  # left out of the percentiles
            "startup_ms": max((b.latency_ms for b in startup), default=None),
            "rows": sum(b.rows for b in unique),
            "rows_per_s": rows_per_s,
            "p50_ms": p50,
            "p90_ms": percentile(latencies, 90),
            "p99_ms": percentile(latencies, 99),
            "offset_management_ms": om,
            # with async on, walCommit and commitOffsets time only the hand-off: not a share of anything
            "offset_management_share": round(om / p50, 3) if p50 and om is not None and not self.is_async else None,
        }


def configuration_key(configuration: dict[str, Any] | None) -> str:
    return json.dumps(configuration, sort_keys=True)


def group_batches(batches: list[Batch]) -> list[Group]:
    """Runs of consecutive batches (in the order written) with one deployment and one configuration."""
    groups: list[Group] = []
    for batch in batches:
        current = groups[-1] if groups else None
        if (
            current is None
            or current.deployment_id != batch.deployment_id
            or current.configuration != batch.configuration  # dicts compare by content, in any key order
        ):
            current = Group(batch.deployment_id, batch.configuration)
            groups.append(current)
        current.batches.append(batch)
    return groups
