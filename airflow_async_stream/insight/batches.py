"""Check from the progress log that no input was skipped across restarts and configuration changes.

For every batch id the latest run of it counts (a restart may re-run batches that were never durably
committed). Then the batch ids must be contiguous, and each batch must start exactly where the previous
one ended, source by source.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

__all__ = ["batch_window", "continuity_problems", "idle_between", "longest_idle", "ran_a_batch"]


def continuity_problems(events: Iterable[dict[str, Any]]) -> list[str]:
    """Problems found, in words; empty when the batches cover the input without a hole."""
    final: dict[int, dict[str, Any]] = {}
    for event in events:  # in the order written: later runs of a batch id replace earlier ones
        final[int(event["batch_id"])] = event
    problems: list[str] = []
    ids = sorted(final)
    for previous, current in zip(ids, ids[1:], strict=False):
        if current != previous + 1:
            problems.append(f"no progress for batches {previous + 1}..{current - 1}")
            continue
        ends = [s.get("end_offset") for s in final[previous].get("sources", [])]
        starts = [s.get("start_offset") for s in final[current].get("sources", [])]
        if ends != starts:
            problems.append(f"batch {current} starts at {starts} but batch {previous} ended at {ends}")
    return problems


def ran_a_batch(event: Mapping[str, Any]) -> bool:
    """Whether a progress event is of a micro-batch that ran; Spark also reports triggers that found no new
    data (``latestOffset`` and ``triggerExecution`` only), under the id of the batch still to come."""
    return "addBatch" in (event.get("duration_ms") or {})


def batch_window(event: Mapping[str, Any]) -> tuple[float, float]:
    """When a micro-batch started and ended, in epoch seconds, from its progress event (Spark's trigger
    timestamp and the trigger's execution time)."""
    start = datetime.fromisoformat(str(event["timestamp"]).replace("Z", "+00:00")).timestamp()
    return start, start + float((event.get("duration_ms") or {}).get("triggerExecution", 0)) / 1000


def idle_between(before: dict[str, Any], after: dict[str, Any]) -> float:
    """Seconds no micro-batch ran between two batches: from the end of ``before`` to the start of ``after``."""
    return round(batch_window(after)[0] - batch_window(before)[1], 3)


def longest_idle(events: Iterable[dict[str, Any]]) -> tuple[float, dict[str, Any], dict[str, Any]] | None:
    """The longest time no micro-batch ran between two consecutive batches that ran (in the order written,
    across deployments and switches), with those two batches; None with fewer than two."""
    ran = [event for event in events if ran_a_batch(event)]
    gaps = [(idle_between(before, after), before, after) for before, after in zip(ran, ran[1:], strict=False)]
    return max(gaps, key=lambda gap: gap[0]) if gaps else None
