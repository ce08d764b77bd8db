"""`airflow-async-stream list`: every job this host deployed, and those of fleet indexes and checkpoint
folders, one line each."""

from __future__ import annotations

import json
import os
import re
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from tests.helpers import make_checkpoint
from tests.unit.cli_run import Ran, cli
from tests.unit.helpers import FRESH_FOR_S, fake_deployment


def _list(*args: str, home: Path) -> Ran:
    return cli("list", *args, env={"AIRFLOW_ASYNC_STREAM_HOME": str(home)})


def _job(root: Path, name: str, *, ended_s_ago: float, offsets: list[int], commits: list[int]) -> ControlArea:
    """A job like fake_deployment's, named ``name`` at ``root/name``, its last batch ended that long ago."""
    os.rename(fake_deployment(root).root, f"{root / name}.async-stream")  # it writes root/ck.async-stream
    control = ControlArea(f"{root / name}.async-stream")
    for record in ("status.json", "deployment.json"):
        control.write_json(record, {**control.read_json(record), "job": name})
    started = datetime.fromtimestamp(time.time() - ended_s_ago - 0.08, UTC).isoformat()
    control.append_progress(
        {
            "deployment_id": "d1",
            "batch_id": 9,
            "timestamp": started,
            "num_input_rows": 1,
            "duration_ms": {"triggerExecution": 80, "addBatch": 60},
        }
    )
    make_checkpoint(root / name, offsets, commits)
    return control


def test_list_shows_each_job_once_from_every_source(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home, folder = tmp_path / "home", tmp_path / "checkpoints"
    here = _job(
        folder, "clicks", ended_s_ago=3, offsets=[0, 4, 7], commits=[0, 4, 7]
    )  # async gaps: not a fault while it runs
    indexed = _job(tmp_path / "other", "orders", ended_s_ago=600, offsets=[0, 1, 2], commits=[0, 1])
    with monkeypatch.context() as scoped:  # the session's own registry variable is back afterwards
        scoped.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(home))
        registry.record("clicks", str(folder / "clicks"), here.url, "d1")
    FleetIndex(str(tmp_path / "index")).record_active("orders", indexed.url, "run-1")
    indexed.write_json("status.json", {**indexed.read_json("status.json"), "state": "stopped"})
    _job(tmp_path / "third", "views", ended_s_ago=30, offsets=[0], commits=[0])
    gone = ControlArea(f"{tmp_path / 'third' / 'views'}.async-stream")
    gone.write_json("status.json", {**gone.read_json("status.json"), "heartbeat_at": time.time() - 2 * FRESH_FOR_S})
    FleetIndex(str(tmp_path / "index")).record_active("views", gone.url, "run-1")

    asked = time.time()
    result = _list("--folder", str(folder), "--index", str(tmp_path / "index"), home=home)
    late = time.time() - asked  # the age is the command's own clock's
    assert result.returncode == 0 and result.stderr == "", result
    lines = result.stdout.splitlines()
    assert lines[0].split() == ["NAME", "HEALTH", "STATE", "ASYNC", "PROGRESS", "LAST", "BATCH", "RESTART"]
    rows = {line.split()[0]: line for line in lines[1:-1]}
    assert set(rows) == {"clicks", "orders", "views"}, lines  # clicks: in the registry and the folder, listed once
    assert rows["clicks"].split("  ")[0] == "clicks"
    assert "running" in rows["clicks"] and "on, interval 0 ms" in rows["clicks"]
    age = int(re.search(r" 9 \((\d+) s ago\)", rows["clicks"])[1])  # type: ignore[index]
    assert 3 <= age <= 3 + late + 1 and rows["clicks"].endswith("sync needs migration")  # running async: no UNSAFE
    assert rows["clicks"].split()[1:3] == ["healthy", "running"]
    assert "9 (10 min ago)" in rows["orders"] and rows["orders"].endswith("safe")
    assert rows["orders"].split()[1:3] == ["stopped", "stopped"]
    assert rows["views"].split()[1:3] == ["crashed", "failed"]  # said it runs, but its heartbeat is 10 minutes old
    assert gone.read_status().state == "running"  # type: ignore[union-attr]  # shown so; a read never writes
    assert lines[-1] == "3 jobs"

    data = json.loads(_list("--json", "--folder", str(folder), home=home).stdout)
    assert [(r["name"], r["source"].split(" ")[0], r["restart"]["sync_restart_safe"]) for r in data] == [
        ("clicks", "this", False)
    ]
    assert data[0]["last_batch"]["batch_id"] == 9 and data[0]["async"] == {"enabled": True, "checkpoint_interval_ms": 0}
    assert _list(home=home).stdout.splitlines()[1].startswith("clicks")  # this host's registry alone
    assert _list("--no-registry", home=home).stdout == "no jobs found\n"


def test_list_says_which_job_cannot_be_read_and_refuses_a_folder_that_is_not_there(tmp_path: Path) -> None:
    home = tmp_path / "home"
    broken = _job(tmp_path / "checkpoints", "broken", ended_s_ago=1, offsets=[0], commits=[0])
    Path(broken.path("status.json")).write_text("{not json")
    result = _list("--folder", str(tmp_path / "checkpoints"), home=home)
    assert result.returncode == 1 and result.stderr == "", result
    assert result.stdout.splitlines()[1].split()[:2] == ["broken", "unreadable"]
    assert "status.json is not valid JSON" in result.stdout

    missing = _list("--folder", str(tmp_path / "nothing"), home=home)
    assert missing.returncode == 2 and missing.stdout == ""
    assert missing.stderr == f"airflow-async-stream: --folder {tmp_path / 'nothing'}: no folder there\n"
