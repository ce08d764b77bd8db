"""Trigger that waits, in the triggerer, until enough batches are committed in a checkpoint."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.state.commits import check_commits
from airflow_async_stream.waits import WaitLog

__all__ = ["CommittedBatchesTrigger"]


class CommittedBatchesTrigger(BaseTrigger):
    """Poll the commit log until ``min_batches`` batches newer than ``baseline`` are committed.

    Emits one event ``{"status": "success" | "error" | "timeout", "message": ..., "check": {...}}``:
    error when the job failed, stopped or lost its driver; timeout at ``deadline`` (epoch seconds).
    """

    def __init__(
        self,
        checkpoint: str,
        baseline: int | None,
        min_batches: int,
        deadline: float,
        started_at: float,
        poll_interval: float = 1.0,
    ) -> None:
        super().__init__()
        self.checkpoint = checkpoint
        self.baseline = baseline
        self.min_batches = min_batches
        self.deadline = deadline
        self.started_at = started_at
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "checkpoint": self.checkpoint,
                "baseline": self.baseline,
                "min_batches": self.min_batches,
                "deadline": self.deadline,
                "started_at": self.started_at,
                "poll_interval": self.poll_interval,
            },
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        say = WaitLog(
            self.log,
            f"Waiting for committed batches in {self.checkpoint}",
            self.deadline - self.started_at,
            clock=time.time,
            started=self.started_at,
        )
        while True:
            try:
                check = await asyncio.to_thread(check_commits, self.checkpoint, self.baseline, self.min_batches)
            except AsyncStreamError as exc:  # unreadable checkpoint or status: waiting longer will not help
                yield TriggerEvent({"status": "error", "message": str(exc), "check": None})
                return
            say(check.progress() + ("; the source has no new data" if check.source_idle else ""))
            if check.done:
                yield TriggerEvent({"status": "success", "message": check.progress(), "check": check.to_json()})
                return
            if check.job_error:
                yield TriggerEvent({"status": "error", "message": check.job_error, "check": check.to_json()})
                return
            if time.time() >= self.deadline:
                message = check.timeout_message(time.time() - self.started_at)
                yield TriggerEvent({"status": "timeout", "message": message, "check": check.to_json()})
                return
            await asyncio.sleep(self.poll_interval)
