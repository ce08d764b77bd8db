"""Check from the progress log that no input was skipped across restarts and configuration changes.

For every batch id the latest run of it counts (a restart may re-run batches that were never durably
committed). Then the batch ids must be contiguous, and each batch must start exactly where the previous
one ended, source by source.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["continuity_problems"]


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
