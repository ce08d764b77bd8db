"""The benchmarks' bookkeeping (no Spark): the same batches judged on each side, a side that ran short is an
error, a partial run replaces only its own sections, and both sides get the provider driver's Spark settings."""

from __future__ import annotations

import json
from pathlib import Path

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
    with pytest.raises(BenchError, match=r"provider async0, round 2: 3 of the 5 batches after 5 warm-up ones ran "
                                         r"\(missing \[8, 9\]\)"):  # fmt: skip
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
