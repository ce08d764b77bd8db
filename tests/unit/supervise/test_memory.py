"""What the watcher's memory spares a sweep: with nothing changed it reads the status, the exit record and the
deployment record and nothing else, never listing the progress log; a rewritten status has it read the progress
tail the status names; a new deployment has it read the spec again; a dead driver is still seen at once.
Local records written by hand; the reads are counted by record name."""

from __future__ import annotations

import json
import os
import socket
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.state import progress_log
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.supervise.memory import Memory
from airflow_async_stream.supervise.watch import sweep
from tests.helpers import rate_noop

DEPLOYMENT = "20261128T050000Z-aaaaaaaa"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """Every record read and every listing of the progress log, by name."""
    counted: Counter[str] = Counter()
    read_json, read_bytes = ControlArea.read_json, ControlArea.read_bytes
    segments, tail = progress_log.segments, progress_log._tail

    def counting_json(self: ControlArea, name: str) -> Any:
        counted[name] += 1
        return read_json(self, name)

    def counting_bytes(self: ControlArea, name: str) -> bytes:
        counted[name] += 1
        return read_bytes(self, name)

    def counting_list(area: Any) -> Any:
        counted["LIST progress/"] += 1
        return segments(area)

    def counting_tail(area: Any, files: list[tuple[str, int]], max_bytes: int) -> Any:
        counted["progress tail"] += 1
        return tail(area, files, max_bytes)

    monkeypatch.setattr(ControlArea, "read_json", counting_json)
    monkeypatch.setattr(ControlArea, "read_bytes", counting_bytes)
    monkeypatch.setattr(progress_log, "segments", counting_list)
    monkeypatch.setattr(progress_log, "_tail", counting_tail)
    return counted


@pytest.fixture
def job(tmp_path: Path) -> ControlArea:
    spec = rate_noop("job", str(tmp_path / "ck"))
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": DEPLOYMENT, "deployed_at": time.time() - 60})
    for batch in range(5):
        control.append_progress({"deployment_id": DEPLOYMENT, "batch_id": batch, "duration_ms": {}})
    _heartbeat(control)
    return control


def _heartbeat(control: ControlArea, **changes: Any) -> None:
    """The driver rewrites its status, naming its progress files."""
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": DEPLOYMENT,
            "state": "running",
            "heartbeat_at": time.time(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "batches": 5,
            "last_batch_id": 4,
            "started_at": time.time() - 60,
            "last_progress_at": time.time(),
            "progress_files": control.progress_files(),
            **changes,
        },
    )


def _sweep(job: ControlArea, memory: Memory) -> list[str]:
    return [c.event for c in sweep([("job", job.url, "/ck")], memory=memory)]


def test_a_sweep_with_nothing_changed_reads_three_small_records_and_lists_nothing(
    job: ControlArea, reads: Counter[str]
) -> None:
    memory = Memory()
    _sweep(job, memory)  # the first look reads what it needs
    assert reads["spec.json"] == 1 and reads["progress tail"] == 1 and reads["LIST progress/"] == 0
    reads.clear()
    assert _sweep(job, memory) == []
    assert set(reads) == {"status.json", "driver-exit.json", "deployment.json"}, reads


def test_a_rewritten_status_has_the_tail_it_names_read_and_not_the_rest(job: ControlArea, reads: Counter[str]) -> None:
    memory = Memory()
    _sweep(job, memory)
    job.append_progress({"deployment_id": DEPLOYMENT, "batch_id": 5, "duration_ms": {}})
    _heartbeat(job, batches=6, last_batch_id=5)
    reads.clear()
    assert _sweep(job, memory) == []
    assert set(reads) == {"status.json", "progress tail"}, reads  # alive since: no exit record, same deployment


def test_a_new_deployment_has_its_spec_and_record_read_again(job: ControlArea, reads: Counter[str]) -> None:
    memory = Memory()
    _sweep(job, memory)
    job.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "20261128T060000Z-bbbbbbbb", "deployed_at": time.time()})
    _heartbeat(job, deployment_id="20261128T060000Z-bbbbbbbb")
    reads.clear()
    _sweep(job, memory)
    assert reads["spec.json"] == 1 and reads["deployment.json"] == 1


def test_a_driver_whose_exit_is_recorded_is_seen_crashed_at_the_next_sweep(job: ControlArea) -> None:
    memory = Memory()
    assert _sweep(job, memory) == []
    job.write_json(
        ControlArea.DRIVER_EXIT,
        {"deployment_id": DEPLOYMENT, "exited_at": time.time(), "host": socket.gethostname(), "returncode": 137},
    )
    assert _sweep(job, memory) == ["crashed"]


def test_the_memory_holds_only_the_jobs_of_the_last_sweep(job: ControlArea, tmp_path: Path) -> None:
    memory = Memory()
    _sweep(job, memory)
    assert memory.get(job.url) is not None
    sweep([], memory=memory)
    assert memory.get(job.url) is None
