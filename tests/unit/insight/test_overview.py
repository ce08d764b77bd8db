"""A page's rows and one job's detail, from a control area and checkpoint laid out as the driver leaves them."""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path

import pytest

from airflow_async_stream.insight.overview import TAIL_BYTES, job_detail, job_row
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.sources import Found
from tests.helpers import make_checkpoint, rate_noop, snapshot
from tests.unit.helpers import batch_events, configuration

SYNC, ASYNC = configuration(False), configuration(True, 0)


def _job(tmp_path: Path, events: list[dict], name: str = "clicks") -> Found:
    """A live job switched in place from sync to async at interval 0, held by a DAG run, with a gapped checkpoint."""
    checkpoint = make_checkpoint(tmp_path / name, [0, 4, 7], [0, 4, 7])
    control = ControlArea.for_checkpoint(checkpoint)
    control.ensure()
    spec = rate_noop(name, checkpoint, sink={"format": "kafka"})
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(
        ControlArea.DEPLOYMENT,
        {
            "deployment_id": "d1",
            "job": name,
            "checkpoint": checkpoint,
            "async_progress": SYNC["async_progress"],
            "trigger": SYNC["trigger"],
            "airflow": {"dag_id": "deploy_clicks", "run_id": "manual__1"},
        },
    )
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d1",
            "state": "running",
            "job": name,
            "heartbeat_at": time.time(),
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "configuration": ASYNC,
            "switches": 1,
        },
    )
    control.write_json(
        ControlArea.HOLD,
        {
            "holder": "DAG run safe_disable/r9",
            "purpose": "safe-disable clicks",
            "dag_id": "safe_disable",
            "run_id": "r9",
            "acquired_at": time.time(),
            "expires_at": time.time() + 600,
        },
    )
    control.write_json(
        ControlArea.SWITCH_ACCOUNT,
        {
            "request_id": "q1",
            "deployment_id": "d1",
            "phase": "done",
            "outcome": "switched",
            "pause_s": 0.42,
            "started_at": time.time(),
        },
    )
    control.write_json(ControlArea.DAG_RUNS, {"stop": {"dag_id": "stop_clicks", "run_id": "s1", "at": time.time()}})
    for event in events:
        control.append_progress(event)
    return Found(name, checkpoint, control.url, "checkpoint folder x")


def _switched(sync: int = 30, fast: int = 20, start: float | None = None, om: float = 120.0) -> list[dict]:
    start = time.time() - 100 if start is None else start
    return batch_events([200.0] * sync, [om] * sync, conf=SYNC, start=start) + batch_events(
        [80.0] * fast, [1.0] * fast, conf=ASYNC, start=start + sync, first_batch=sync, run="r2"
    )


def test_an_unreadable_hold_is_shown_as_one_not_as_the_rows_error(tmp_path: Path) -> None:
    found = _job(tmp_path, _switched(start=time.time() - 100))
    ControlArea(found.control_area).write_json(ControlArea.HOLD, {"holder": "x", "expires_at": "tomorrow"})
    row = job_row(found)
    assert row["error"] is None and row["hold"]["holder"] == "an unreadable hold" and row["hold"]["unreadable"]
    assert "hold.json: expires_at should be a number" in row["hold"]["purpose"]


def test_a_row_sums_the_job_up_from_its_records_its_checkpoint_and_its_newest_batches(tmp_path: Path) -> None:
    start = time.time() - 100
    found = _job(tmp_path, _switched(start=start))
    before = snapshot(tmp_path)
    row = job_row(found, at=start + 60)
    assert snapshot(tmp_path) == before  # read-only
    assert row["error"] is None and row["name"] == "clicks" and row["state"] == "running" and row["live"] is True
    assert row["async"] == {"enabled": True, "checkpoint_interval_ms": 0}  # the running query's, not the deploy's
    assert row["runs_with"] == "async 0 ms, trigger 100 milliseconds"  # the page shows the words, not JSON
    assert row["restart"]["sync_restart_safe"] is False and "offsets/6" in row["restart"]["reason"]
    assert row["last_batch"]["batch_id"] == 49 and row["last_batch"]["age_s"] == pytest.approx(60 - 49 - 0.08, abs=0.1)
    assert row["p50_ms"] == 80.0 and row["offset_management_share"] == 0.6  # of the sync batches before
    assert row["hold"]["holder"] == "DAG run safe_disable/r9"
    change = row["last_change"]
    assert (
        change["kind"] == "switch" and change["batch_id"] == 30 and change["pause_s"] == 0.8
    )  # 1 s apart, 0.2 s batch
    assert change["summary"].startswith("switch: sync, trigger 100 milliseconds -> async 0 ms")
    assert row["switch"]["outcome"] == "switched" and row["switch"]["pause_s"] == 0.42
    assert [(d["role"], d["dag_id"]) for d in row["dags"]] == [
        ("holds it now", "safe_disable"),
        ("stops it", "stop_clicks"),  # dag-runs.json, which the hold writes
        ("deploys it", "deploy_clicks"),  # deployment.json's: a deploy that took no hold
    ]


def test_a_row_reads_only_the_newest_part_of_a_long_log(tmp_path: Path) -> None:
    """3000 batches (about 2 MB): the row's p50 is of the newest batches only, the detail's of them all."""
    events = batch_events([500.0] * 2900, [10.0] * 2900, conf=SYNC) + batch_events(
        [100.0] * 100, [10.0] * 100, conf=SYNC, start=1_800_002_900.0, first_batch=2900, deployment="d2"
    )
    found = _job(tmp_path, events)
    assert sum(len(json.dumps(e)) for e in events) > 15 * TAIL_BYTES
    row = job_row(found)
    assert row["p50_ms"] == 100.0
    assert row["last_change"] is None  # the new deployment is further back than the row reads
    ControlArea(found.control_area).write_json(
        ControlArea.SWITCH_ACCOUNT,
        {
            "request_id": "q2",
            "deployment_id": "d2",
            "outcome": "switched",
            "before": SYNC,
            "after": ASYNC,
            "first_batch_after": 2950,
            "pause_s": 0.31,
            "started_at": 1_800_002_950.0,
        },
    )
    change = job_row(found)["last_change"]  # a switch in place the driver accounted for: that one
    assert (change["kind"], change["batch_id"], change["pause_s"]) == ("switch", 2950, 0.31)
    detail = job_detail(found)
    assert detail["report"]["batches"] == 3000 and len(detail["series"]) == 2000
    assert detail["series"][-1] == {
        "batch_id": 2999,
        "start": 1_800_002_999.0,
        "latency_ms": 100.0,
        "offset_management_ms": 10.0,
        "async": False,
    }


def test_the_detail_adds_the_reports_advice_and_changes(tmp_path: Path) -> None:
    found = _job(tmp_path, _switched(sync=30, fast=30, om=10.0))  # offset management was 5 %: async buys little
    detail = job_detail(found)
    assert detail["error"] is None and detail["report"]["p50_ms"] == 80.0
    assert [c["summary"] for c in detail["changes"]] == [
        "switch: sync, trigger 100 milliseconds -> async 0 ms, trigger 100 milliseconds"
    ]
    assert [s["async"] for s in detail["series"]] == [False] * 30 + [True] * 30
    assert [a["kind"] for a in detail["advice"]] == ["turn_off"]


def test_an_unreadable_control_area_is_its_jobs_error_row_with_every_key(tmp_path: Path) -> None:
    good = job_row(_job(tmp_path, _switched(), name="good"))
    broken = _job(tmp_path, _switched(), name="broken")
    Path(ControlArea(broken.control_area).path(ControlArea.STATUS)).write_text("{torn")
    row = job_row(broken)
    assert row["name"] == "broken" and row["state"] is None and "status.json" in row["error"]
    assert row.keys() == good.keys()
    assert job_detail(broken)["error"] == row["error"]
    gone = job_row(Found("gone", str(tmp_path / "gone"), str(tmp_path / "gone.async-stream"), "fleet index i"))
    assert "no control area at" in gone["error"]
    source = job_row(Found("s3://x", "", "", "fleet index s3://x", error="the fleet index cannot be read: boom"))
    assert source["error"] == "the fleet index cannot be read: boom" and source.keys() == good.keys()


def test_rows_keep_their_order_local_ones_read_in_turn_remote_ones_in_threads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading

    from airflow_async_stream.insight import overview

    read_by: dict[str, str] = {}

    def row(found: Found, doctors: object = None) -> dict:
        read_by[found.name] = threading.current_thread().name
        return {"name": found.name}

    monkeypatch.setattr(overview, "job_row", row)
    names = ["a", "s3", "b", "gs", "c"]
    found = [
        Found(n, "", f"{n}://bucket/{n}.async-stream" if len(n) == 2 else f"/ck/{n}.async-stream", "x") for n in names
    ]
    assert [r["name"] for r in overview.job_rows(found)] == names
    assert {n for n, thread in read_by.items() if thread.startswith("job-row")} == {"s3", "gs"}


def test_a_read_of_a_fleet_that_just_went_down_shows_it_and_writes_nothing(tmp_path: Path) -> None:
    """Every dead driver is shown failed and crashed at once, and nothing is written (with read-only credentials
    a page shows the same); the next actor's look records each one failed, with its incident, once."""
    from airflow_async_stream.insight import overview
    from airflow_async_stream.insight.checkup import check_up
    from airflow_async_stream.state.incidents import read_incidents

    found = []
    for n in range(3):
        control = ControlArea.for_checkpoint(str(tmp_path / f"ck{n}"))
        control.ensure()
        control.write_json(
            "status.json",
            {"deployment_id": f"d{n}", "state": "running", "heartbeat_at": 1000.0, "batches": 5, "first_batch_id": 0},
        )
        found.append(Found(f"job{n}", str(tmp_path / f"ck{n}"), control.url, "x"))
    before = snapshot(tmp_path)
    rows = overview.job_rows(found)
    assert [(r["state"], r["health"]["verdict"]) for r in rows] == [("failed", "crashed")] * 3
    assert snapshot(tmp_path) == before
    for f in found:
        check_up(ControlArea(f.control_area), f.checkpoint)
        check_up(ControlArea(f.control_area), f.checkpoint)
    assert [ControlArea(f.control_area).read_status().state for f in found] == ["failed"] * 3  # type: ignore[union-attr]
    assert [len(read_incidents(ControlArea(f.control_area))) for f in found] == [1, 1, 1]
