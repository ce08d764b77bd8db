"""Each job's figures from the records the watcher reads, and their names with and without tags."""

from __future__ import annotations

import time
from pathlib import Path

from airflow_async_stream.insight.health import Health, Verdict
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Status
from airflow_async_stream.supervise.metrics import GAUGES, HEALTH_CODES, figures_of, stat_name
from airflow_async_stream.supervise.watch import sweep
from tests.helpers import rate_noop


def _event(batch: int, ms: int, deployment: str = "d1") -> dict[str, object]:
    return {
        "batch_id": batch,
        "deployment_id": deployment,
        "duration_ms": {"triggerExecution": ms},
        "input_rows_per_s": 50.0 + batch,
        "processed_rows_per_s": 40.0 + batch,
    }


def test_figures_come_from_the_deployments_newest_batches() -> None:
    at = time.time()
    status = Status(deployment_id="d1", state="running", last_progress_at=at - 2.5)
    events = [_event(0, 9000, "d0"), *(_event(i, 100 * i) for i in range(1, 6))]
    figures = figures_of("clicks", status, Health(Verdict.HEALTHY, "ok"), events, 2, at)
    assert figures.gauges() == [
        ("health", 0.0),
        ("up", 1.0),
        ("seconds_since_last_batch", 2.5),
        ("batch_latency_p50_ms", 300.0),
        ("input_rows_per_second", 55.0),
        ("processed_rows_per_second", 45.0),
        ("restarts_in_window", 2.0),
    ]
    down = figures_of("clicks", None, Health(Verdict.CRASHED, "gone"), [], None, at)
    assert down.gauges() == [("health", float(HEALTH_CODES[Verdict.CRASHED])), ("up", 0.0)]
    assert sorted(HEALTH_CODES.values()) == list(range(len(Verdict)))  # every verdict has its own code


def test_the_job_is_a_tag_or_part_of_the_name() -> None:
    assert stat_name("health", "clicks.eu", tagged=True) == "async_stream.job.health"
    assert stat_name("health", "clicks.eu", tagged=False) == "async_stream.job.clicks__eu.health"
    assert stat_name("up", "a b/c", tagged=False) == "async_stream.job.a_b_c.up"


def test_a_sweep_measures_every_job_it_reads(tmp_path: Path) -> None:
    spec = rate_noop("job", str(tmp_path / "ck"))
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    measured: list[object] = []
    sweep([("job", control.url, spec["checkpoint"])], measure=measured.append)
    [figures] = measured
    assert figures.job == "job" and figures.health == HEALTH_CODES[Verdict.NOT_DEPLOYED]  # type: ignore[attr-defined]
    assert set(GAUGES) >= {name for name, _ in figures.gauges()}  # type: ignore[attr-defined]
