"""The no-input-skipped check over progress events."""

from __future__ import annotations

from airflow_async_stream.insight.batches import continuity_problems, longest_idle


def event(batch: int, start: int | None, end: int) -> dict:
    return {"batch_id": batch, "sources": [{"start_offset": start, "end_offset": end}]}


def test_contiguous_batches_pass() -> None:
    assert continuity_problems([event(0, None, 5), event(1, 5, 9), event(2, 9, 12)]) == []


def test_a_re_run_batch_replaces_the_lost_one() -> None:
    # batches 1 and 2 ran, were lost (async, not durable), and were re-run after a restart from batch 0's end
    events = [event(0, None, 5), event(1, 5, 9), event(2, 9, 12), event(1, 5, 10), event(2, 10, 14), event(3, 14, 15)]
    assert continuity_problems(events) == []


def test_a_hole_in_the_offsets_is_reported() -> None:
    assert continuity_problems([event(0, None, 5), event(1, 6, 9)]) == [
        "batch 1 starts at [6] but batch 0 ended at [5]"
    ]


def test_missing_batch_ids_are_reported() -> None:
    assert continuity_problems([event(0, None, 5), event(3, 5, 9)]) == ["no progress for batches 1..2"]


def test_the_longest_idle_time_is_between_consecutive_batches_that_ran() -> None:
    def event(batch: int, start: str, ms: int, ran: bool = True) -> dict:
        durations = {"triggerExecution": ms, **({"addBatch": 1} if ran else {})}
        return {"batch_id": batch, "timestamp": f"2026-01-01T00:00:{start}Z", "duration_ms": durations}

    events = [
        event(0, "00.000", 500),
        event(1, "01.000", 500),
        event(2, "02.000", 0, ran=False),
        event(2, "04.000", 500),
    ]
    idle, before, after = longest_idle(events)  # type: ignore[misc]
    assert (idle, before["batch_id"], after["batch_id"]) == (2.5, 1, 2)
    assert longest_idle(events[:1]) is None
