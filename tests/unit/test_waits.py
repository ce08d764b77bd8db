"""Long waits say where they are: on every change, and at least every 10 s while nothing changes."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from airflow_async_stream.exceptions import CommittedBatchesTimeoutError
from airflow_async_stream.state.commits import wait_for_commits
from airflow_async_stream.waits import WaitLog
from tests.unit.helpers import gapped_checkpoint


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_wait_logs_each_change_and_every_ten_seconds_without_one(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    say = WaitLog(logging.getLogger("t"), "Waiting for x", timeout_s=60, clock=clock)
    with caplog.at_level(logging.INFO, logger="t"):
        for second in range(25):
            say("2/3 done" if second >= 12 else "1/3 done")
            clock.sleep(1)
    assert [r.getMessage() for r in caplog.records] == [
        "Waiting for x: 1/3 done (0 s of 60 s)",
        "Waiting for x: 1/3 done (10 s of 60 s)",
        "Waiting for x: 2/3 done (12 s of 60 s)",  # a change is said at once
        "Waiting for x: 2/3 done (22 s of 60 s)",
    ]


def test_waiting_for_commits_that_do_not_come_says_so_every_ten_seconds(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkpoint = str(gapped_checkpoint(tmp_path / "ck"))  # commits 0, 4, 7: nothing after 7 ever comes
    clock = Clock()
    monkeypatch.setattr(time, "monotonic", clock)
    with caplog.at_level(logging.INFO, logger="w"), pytest.raises(CommittedBatchesTimeoutError):
        wait_for_commits(checkpoint, 7, 2, timeout_s=35, log=logging.getLogger("w"), poll_s=0.5, sleep=clock.sleep)
    said = [r.getMessage() for r in caplog.records]
    assert [m.rsplit("(", 1)[1] for m in said] == ["0 s of 35 s)", "10 s of 35 s)", "20 s of 35 s)", "30 s of 35 s)"]
    assert (
        said[0] == f"Waiting for committed batches in {checkpoint}: 0/2 batches committed after batch 7 (0 s of 35 s)"
    )
