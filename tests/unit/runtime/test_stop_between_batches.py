"""A stop between micro-batches (runtime/query.py): at once when the query idles between triggers; when its
batches run back to back (each longer than the trigger, so it never idles), as soon as the batch in flight
ends; forced only when that batch outlasts the timeout. The query is a stand-in (no JVM) that counts polls."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.runtime.query import stop_between_batches


class BackToBack:
    """A query whose trigger is always active; its batch in flight (``first``) ends after ``polls`` polls."""

    def __init__(self, first: int | None, polls: int, idle: bool = False) -> None:
        self.batch, self.polls, self.idle = first, polls, idle
        self.seen = 0
        self.stopped_after: int | None = None

    @property
    def isActive(self) -> bool:  # noqa: N802 (PySpark's name)
        return self.stopped_after is None

    @property
    def status(self) -> dict[str, Any]:
        self.seen += 1
        return {"isTriggerActive": not self.idle}

    @property
    def lastProgress(self) -> Any:  # noqa: N802
        ended = self.batch if self.seen <= self.polls else (self.batch or 0) + 1
        return None if ended is None else {"batchId": ended}  # PySpark 3.5's shape; 4.x's objects read alike

    def stop(self) -> None:
        self.stopped_after = self.seen


def test_back_to_back_batches_stop_when_the_batch_in_flight_ends_not_at_the_timeout() -> None:
    query = BackToBack(first=7, polls=5)
    assert stop_between_batches(query, timeout_s=60, poll_s=0) is False  # type: ignore[arg-type]
    assert query.stopped_after == 6  # the poll after the batch ended, not 60 s of polls


def test_the_first_batch_of_a_run_ending_is_a_boundary_too() -> None:
    query = BackToBack(first=None, polls=3)
    assert stop_between_batches(query, timeout_s=60, poll_s=0) is False  # type: ignore[arg-type]
    assert query.stopped_after == 4


def test_an_idle_query_stops_at_once_and_a_batch_outlasting_the_timeout_is_forced() -> None:
    idle = BackToBack(first=3, polls=10**9, idle=True)
    assert stop_between_batches(idle, timeout_s=60, poll_s=0) is False  # type: ignore[arg-type]
    assert idle.stopped_after == 1
    stuck = BackToBack(first=3, polls=10**9)
    assert stop_between_batches(stuck, timeout_s=0.05, poll_s=0.001) is True  # type: ignore[arg-type]
    assert stuck.stopped_after is not None
