"""The benchmarks' bookkeeping (no Spark): the same batches judged on each side, a side that ran short is an
error, a partial run replaces only its own sections, and both sides get the provider driver's Spark settings."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from bench import results as results_file
from bench.sides import BenchError, batches_after_warmup, read_progress_file, spark_settings


def _event(batch_id: int, ran: bool = True, ms: int = 100) -> dict:
    durations = {"triggerExecution": ms, "latestOffset": 1}
    if ran:
        durations["addBatch"] = ms - 10
    return {"batch_id": batch_id, "duration_ms": durations}


def test_the_same_batch_ids_are_kept_on_every_side_whatever_ran_beyond_them() -> None:
    progress = [_event(b) for b in range(12)] + [_event(12, ran=False)]
    kept = batches_after_warmup(progress, warmup=5, batches=4, who="plain sync")
    assert [e["batch_id"] for e in kept] == [5, 6, 7, 8]


def test_a_batch_run_again_counts_once_with_its_latest_event() -> None:
    progress = [_event(0), _event(1, ms=100), _event(1, ms=300), _event(2)]
    kept = batches_after_warmup(progress, warmup=0, batches=3, who="provider")
    assert [e["duration_ms"]["triggerExecution"] for e in kept] == [100, 300, 100]


def test_a_side_that_ran_short_is_an_error_not_a_smaller_sample() -> None:
    progress = [_event(b) for b in range(8)] + [_event(8, ran=False)]
    with pytest.raises(
        BenchError,
        match=r"provider async0, round 2: 3 of the 5 batches after 5 warm-up ones ran "
        r"\(missing \[8, 9\]\)",
    ):
        batches_after_warmup(progress, warmup=5, batches=5, who="provider async0, round 2")


def test_the_plain_side_gets_the_settings_the_provider_driver_runs_with() -> None:
    spec = {
        "name": "j",
        "checkpoint": "/tmp/ck",
        "source": {"format": "rate"},
        "sink": {"format": "noop"},
        "spark_conf": {"spark.sql.shuffle.partitions": 4},
    }
    settings = spark_settings(spec)
    assert settings["master"] == "local[*]"
    assert settings["conf"]["spark.log.level"] == "WARN"  # the driver's default; Spark's own is INFO
    assert settings["conf"]["spark.ui.showConsoleProgress"] == "false"
    assert settings["conf"]["spark.sql.shuffle.partitions"] == "4"
    assert "password" in settings["conf"]["spark.sql.redaction.options.regex"]


def test_progress_written_by_a_listener_is_read_back_line_by_line(tmp_path: Path) -> None:
    path = tmp_path / "progress.jsonl"
    assert read_progress_file(path) == []
    path.write_text(json.dumps(_event(0)) + "\n" + json.dumps(_event(1)) + "\n")
    assert [e["batch_id"] for e in read_progress_file(path)] == [0, 1]


def test_a_partial_run_replaces_its_own_section_and_leaves_the_others_stamped_as_they_were() -> None:
    first = results_file.Run(started="2026-11-20 10:00:00 UTC", machine={"cpus": 2})
    results = results_file.record({}, "latency", {"p50": 1}, first.stamp("2026-11-20 10:00:01 UTC", 61.04))
    results = results_file.record(results, "sensor", {"ms": 7}, first.stamp("2026-11-20 10:05:00 UTC", 3))
    later = results_file.Run(started="2026-11-25 09:00:00 UTC", machine={"cpus": 4})
    results = results_file.record(results, "sensor", {"ms": 6}, later.stamp("2026-11-25 09:00:02 UTC", 2))
    assert results["latency"] == {
        "p50": 1,
        "run": {
            "run_id": first.run_id,
            "run_started": "2026-11-20 10:00:00 UTC",
            "measured_at": "2026-11-20 10:00:01 UTC",
            "seconds": 61.0,
            "machine": {"cpus": 2},
        },
    }
    assert results["sensor"]["ms"] == 6
    assert results["sensor"]["run"]["run_id"] == later.run_id != first.run_id
    assert results["sensor"]["run"]["machine"] == {"cpus": 4}


def test_an_earlier_layouts_file_is_read_with_each_section_stamped_from_its_top(tmp_path: Path) -> None:
    path = tmp_path / "results.json"
    path.write_text(
        json.dumps(
            {
                "latency": {"p50": 1},
                "report": {"s": 0.4},
                "machine": {"cpus": 2},
                "started": "2026-11-25 04:50:29 UTC",
                "measured": {"report": "2026-11-24 23:04:55 UTC"},
                "seconds": {"report": 3},
                "targets": {"x": "y"},
            }
        )
    )
    results = results_file.read(path)
    assert set(results) == {"latency", "report", "targets"}
    assert results["report"]["run"] == {
        "run_id": None,
        "measured_at": "2026-11-24 23:04:55 UTC",
        "seconds": 3,
        "machine": {"cpus": 2},
    }
    assert results["latency"]["run"]["measured_at"] == "2026-11-25 04:50:29 UTC"
    assert "run" not in results["targets"]


def _batch(run: str, batch_id: int, start_s: float, ms: int = 100, ran: bool = True, **extra: Any) -> dict:
    """A progress event starting ``start_s`` seconds after 10:00:00 UTC."""
    whole, frac = divmod(start_s, 1)
    stamp = f"2026-11-25T10:00:{int(whole):02d}.{round(frac * 1000):03d}Z"
    event = {"query_run_id": run, "batch_id": batch_id, "timestamp": stamp, **_event(batch_id, ran, ms), **extra}
    event["batch_id"] = batch_id
    return event


T0 = datetime(2026, 11, 25, 10, 0, tzinfo=UTC).timestamp()


def test_a_switch_pause_runs_from_the_old_querys_last_batch_to_the_new_ones_first_on_either_side() -> None:
    from bench.switch import pauses

    progress = [
        _batch("a", 0, 1.0),
        _batch("a", 1, 2.0),  # ends at 2.1
        _batch("b", 2, 2.3, ran=False),  # a trigger that found no data is not the first batch
        _batch("b", 2, 2.6),
        _batch("b", 3, 3.0),
    ]
    switch = {
        "kind": "to_interval_0",
        "before_run": "a",
        "after_run": "b",
        "stopped_at": T0 + 2.2,
        "started_at": T0 + 2.25,
    }
    found = pauses(progress, [switch], "plain")
    assert found["to_interval_0"] == [
        {"pause_s": 0.5, "to_stopped_s": 0.1, "to_started_s": 0.05, "to_first_batch_s": 0.35}
    ]
    assert found["to_synchronous"] == []


def test_a_switch_with_no_batch_after_it_fails_the_side() -> None:
    from bench.switch import pauses

    switch = {"kind": "to_synchronous", "before_run": "a", "after_run": "b", "stopped_at": T0, "started_at": T0}
    with pytest.raises(BenchError, match="provider: no batch ran after a to_synchronous switch"):
        pauses([_batch("a", 0, 1.0), _batch("b", 1, 2.0, ran=False)], [switch], "provider")


def test_a_fleet_jobs_phases_are_read_from_its_last_three_query_runs() -> None:
    from bench.fleet import _phases

    def conf(enabled: bool, interval: int) -> dict:
        return {"configuration": {"async_progress": {"enabled": enabled, "checkpoint_interval_ms": interval}}}

    progress = [
        _batch("deploy", 0, 1.0, **conf(True, 3000)),
        _batch("deploy", 1, 2.0, **conf(True, 3000)),
        _batch("zero", 2, 3.0, **conf(True, 0)),
        _batch("zero", 3, 4.0, **conf(True, 0)),
        _batch("sync", 4, 5.0, **conf(False, 1000)),
    ]
    assert _phases(progress, "job0") == pytest.approx((T0 + 3.0, T0 + 5.0))
    with pytest.raises(BenchError, match="job0: the last two query runs ran"):
        _phases(progress[:-1] + [_batch("again", 4, 5.0, **conf(True, 0))], "job0")
    with pytest.raises(BenchError, match="job0: 2 query runs"):
        _phases(progress[:3], "job0")
