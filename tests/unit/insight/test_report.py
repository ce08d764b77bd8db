"""The report's figures from hand-made progress events: each checked against the test's own arithmetic."""

from __future__ import annotations

import math

from airflow_async_stream.insight.groups import percentile
from airflow_async_stream.insight.report import build_report
from tests.unit.helpers import batch_events, configuration

SYNC, ASYNC = configuration(False), configuration(True, 3000)


def nearest_rank(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[math.ceil(q / 100 * len(ordered)) - 1]


def test_percentiles_are_by_nearest_rank() -> None:
    assert percentile(range(1, 11), 50) == 5
    assert percentile(range(1, 11), 90) == 9
    assert percentile(range(1, 11), 99) == 10
    assert percentile([7.0], 1) == 7.0
    assert percentile([], 50) is None


def test_a_switch_sync_to_async_splits_the_figures_and_the_share_comes_from_sync_batches() -> None:
    sync_latency = [200.0 + (i * 7) % 40 for i in range(30)]
    sync_om = [120.0 + (i * 3) % 10 for i in range(30)]
    async_latency = [80.0 + (i * 11) % 50 for i in range(40)]
    events = batch_events(sync_latency, sync_om, conf=SYNC) + batch_events(
        async_latency, [1.0] * 40, start=1_800_000_030.0, first_batch=30, run="r2", conf=ASYNC
    )
    data = build_report(events, job="example").to_json()
    assert data["batches"] == 70
    assert [g["batches"] for g in data["groups"]] == [30, 40]
    steady = async_latency[1:]  # the first batch of a query start is left out of the percentiles
    assert data["p50_ms"] == nearest_rank(steady, 50)
    assert data["p90_ms"] == nearest_rank(steady, 90)
    assert data["p99_ms"] == nearest_rank(steady, 99)
    assert [(g["startup_batches"], g["startup_ms"]) for g in data["groups"]] == [
        (1, sync_latency[0]),
        (1, async_latency[0]),
    ]
    share = nearest_rank(sync_om, 50) / nearest_rank(sync_latency, 50)
    assert data["offset_management_share"] == round(share, 3)
    assert data["offset_management_ms"] == nearest_rank(sync_om, 50)
    assert data["groups"][1]["offset_management_share"] is None  # async: a hand-off, not a share
    pause = round(30 - 29 - sync_latency[-1] / 1000, 3)  # the last sync batch's end to the first async start
    assert data["changes"] == [
        {"at": 1_800_000_030.0, "batch_id": 30, "kind": "switch", "from": SYNC, "to": ASYNC, "pause_s": pause}
    ]
    # 100 rows a batch, one batch a second: a batch's rows came in since the one before began
    assert data["groups"][1]["rows_per_s"] == 100.0


def test_a_new_deployment_starts_a_group_even_with_the_same_configuration() -> None:
    events = batch_events([100.0] * 3, [50.0] * 3, conf=SYNC) + batch_events(
        [90.0] * 3, [40.0] * 3, start=1_800_000_100.0, deployment="d2", conf=SYNC
    )
    report = build_report(events)
    assert [c["kind"] for c in report.changes()] == ["deployment"]
    assert report.offset_management()["batches"] == 6  # one configuration: both deployments are the baseline


def test_events_of_earlier_releases_take_their_deployments_configuration() -> None:
    events = batch_events([100.0] * 4, [60.0] * 4)  # no configuration recorded with the batches
    for event in events:
        del event["configuration"]
    data = build_report(events, configurations={"d1": SYNC}).to_json()
    assert data["configuration"] == SYNC
    assert data["offset_management_share"] == 0.6
    unknown = build_report(events).to_json()
    assert unknown["groups"][0]["async"] is None and unknown["offset_management_share"] is None


def test_since_keeps_the_recent_batches_and_idle_triggers_are_not_batches() -> None:
    events = batch_events([100.0] * 10, [10.0] * 10, conf=SYNC)
    events.append({"batch_id": 10, "timestamp": events[-1]["timestamp"], "duration_ms": {"triggerExecution": 1}})
    now = 1_800_000_009.5
    assert build_report(events, since_s=3, now=now).to_json()["batches"] == 3  # started at 7, 8 and 9 s
    assert build_report(events).to_json()["batches"] == 10


def test_an_async_job_says_what_a_failure_would_re_run() -> None:
    events = batch_events([80.0] * 10, [1.0] * 10, conf=ASYNC, rows=250)
    # a restart re-ran batches 8 and 9 in run r2; r1's copies of them are no longer at risk
    events += batch_events([80.0] * 4, [1.0] * 4, start=1_800_000_020.0, first_batch=8, run="r2", conf=ASYNC, rows=7)
    risk = build_report(events, durable_offset=9).to_json()["at_risk"]
    assert risk == {"durable_batch": 9, "batches": 2, "rows": 14}  # batches 10 and 11 of the newest run
    assert build_report(batch_events([80.0], [60.0], conf=SYNC), durable_offset=0).to_json()["at_risk"] is None


def test_state_figures_are_commit_time_per_task_against_the_batch() -> None:
    events = batch_events(
        [500.0, 400.0, 1000.0], [50.0] * 3, conf=SYNC, state=[(640, 64, 5), (1280, 64, 9), (64, 64, 12)]
    )
    state = build_report(events).to_json()["state"]
    # per task: 10, 20, 1 ms; share of the batch: 0.02, 0.05, 0.001 -> p50 0.02
    assert state == {"batches": 3, "commit_ms_per_task": 10.0, "commit_share": 0.02, "rows_in_state": 12}


def test_lines_it_cannot_read_are_counted_not_fatal() -> None:
    events = batch_events([100.0] * 3, [10.0] * 3, conf=SYNC)
    del events[1]["timestamp"]
    events[2]["batch_id"] = "x"
    data = build_report(events).to_json()
    assert (data["batches"], data["skipped_events"]) == (1, 2)


def test_startup_batches_stay_out_of_the_percentiles_and_are_shown_apart() -> None:
    """A 1-3 s startup batch beside steady 30-100 ms ones made p90/p99 of a short group the startup's."""
    latency = [2400.0] + [40.0 + i % 7 for i in range(49)]
    data = build_report(batch_events(latency, [20.0] * 50, conf=SYNC)).to_json()
    group = data["groups"][0]
    assert (group["startup_batches"], group["startup_ms"]) == (1, 2400.0)
    assert data["p99_ms"] == nearest_rank(latency[1:], 99) < 100
    assert group["batches"] == 50  # still counted as a batch that ran


def test_a_one_batch_group_has_no_rate() -> None:
    """One batch of 20,000 rows read "rows/s 20,000": a batch's rows say nothing of a rate on their own."""
    data = build_report(batch_events([300.0], [100.0], rows=20_000, conf=SYNC)).to_json()
    assert data["groups"][0]["rows_per_s"] is None
    assert data["groups"][0]["p50_ms"] == 300.0  # its only batch, startup or not


def test_batches_run_again_count_once_and_are_said() -> None:
    """After a switch from async, Spark ran batches 95 and 96 again: the group listed them twice."""
    first = batch_events([50.0] * 97, [1.0] * 97, conf=ASYNC)  # batches 0-96
    again = batch_events([60.0] * 10, [1.0] * 10, start=1_800_000_097.0, first_batch=95, run="r2", conf=ASYNC)
    group = build_report(first + again).to_json()["groups"][0]
    assert (group["batches"], group["re_runs"], group["first_batch"], group["last_batch"]) == (105, 2, 0, 104)
    assert group["rows"] == 105 * 100
