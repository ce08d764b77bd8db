"""The health verdict: each rule from hand-made records."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pytest

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.insight.health import LAG_BATCHES, Health, Limits, Look, Verdict, judge
from airflow_async_stream.spec.health import HealthSpec
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.trigger import Trigger
from airflow_async_stream.state.liveness import Liveness, liveness
from airflow_async_stream.state.records import NOT_LAUNCHED, DriverExit, State, Status
from tests.helpers import rate_noop

AT = 1_800_000_000.0
LIMITS = Limits(batch_stalled_after_s=60.0, no_batch_after_s=30.0)
LIVE = Liveness(True, "state is running, heartbeat 1 s ago")


def running(**changes: Any) -> Status:
    fields: dict[str, Any] = {
        "deployment_id": "d-1",
        "state": State.RUNNING,
        "query_id": "q",
        "started_at": AT - 600,
        "heartbeat_at": AT - 1,
        "batches": 40,
        "first_batch_id": 10,
        "last_batch_id": 49,
        "last_progress_at": AT - 2,
    }
    return Status(**{**fields, **changes})


def verdict(status: Status | None, live: Liveness = LIVE, at: float = AT, **look: Any) -> Health:
    return judge(Look(status, live, **look), LIMITS, at=at)


def test_a_job_running_batches_is_healthy() -> None:
    health = verdict(running())
    assert health.verdict == Verdict.HEALTHY and health.since == AT - 600


def test_an_idle_source_is_idle_never_stalled_however_long() -> None:
    health = verdict(running(last_progress_at=AT - 3600, idle_at=AT - 1))
    assert (health.verdict, health.since) == (Verdict.IDLE, AT - 3600)
    assert "no new data" in health.reason


def test_a_batch_active_past_its_limit_is_stalled_since_it_began() -> None:
    assert verdict(running(last_progress_at=AT - 70, batch_active_since=AT - 59)).verdict == Verdict.HEALTHY
    health = verdict(running(last_progress_at=AT - 70, batch_active_since=AT - 61))
    assert (health.verdict, health.since) == (Verdict.STALLED, AT - 61)
    assert health.reason.startswith("batch 50 has run for 61 s (limit 60 s)")
    # a batch recorded after the heartbeat that saw it active: it ended, whatever that heartbeat said
    assert verdict(running(last_progress_at=AT - 1, batch_active_since=AT - 61)).verdict == Verdict.HEALTHY
    # a slow batch under way is no idle source, whatever Spark says of new data meanwhile
    slow = running(last_progress_at=AT - 30, batch_active_since=AT - 29, data_available=False, idle_at=AT - 31)
    assert verdict(slow).verdict == Verdict.HEALTHY


def test_no_batch_while_spark_says_data_is_waiting_is_stalled() -> None:
    assert verdict(running(last_progress_at=AT - 29, data_available=True)).verdict == Verdict.HEALTHY
    assert verdict(running(last_progress_at=AT - 31, data_available=False)).verdict == Verdict.IDLE
    assert verdict(running(data_available=False)).verdict == Verdict.HEALTHY  # between two batches
    assert verdict(running(idle_at=AT - 1)).verdict == Verdict.HEALTHY  # an idle trigger between two batches
    assert verdict(running(last_progress_at=AT - 31)).verdict == Verdict.HEALTHY  # no word on the source yet: unknown
    health = verdict(running(last_progress_at=AT - 32, data_available=True))
    # judged by what the driver said at its last heartbeat: an idle event it has not written yet is not a stall
    assert (
        verdict(running(last_progress_at=AT - 31, heartbeat_at=AT - 2, data_available=True)).verdict == Verdict.HEALTHY
    )
    assert (
        health.verdict == Verdict.STALLED and "no batch for 32 s although its source reports new data" in health.reason
    )


def test_a_driver_gone_after_batches_crashed_and_before_any_failed_to_start() -> None:
    gone = Liveness(False, "state is running but the last heartbeat is 25 s old: the driver is gone")
    assert verdict(running(), gone).verdict == Verdict.CRASHED
    never = running(batches=0, first_batch_id=None, last_batch_id=None)
    assert verdict(never, gone).verdict == Verdict.FAILED_TO_START
    assert "its driver died: state is running but the last heartbeat" in verdict(running(), gone).reason


def test_final_states_say_why() -> None:
    failed = verdict(running(state=State.FAILED, error="StreamingQueryException: boom\n== Plan ==", finished_at=AT - 5))
    assert (failed.verdict, failed.since, failed.reason) == (
        Verdict.CRASHED,
        AT - 5,
        "its query failed: StreamingQueryException: boom",
    )
    early = running(state=State.FAILED, batches=0, first_batch_id=None, error="AnalysisException: no column x")
    assert verdict(early).verdict == Verdict.FAILED_TO_START and "no column x" in verdict(early).reason
    stopped = verdict(running(state=State.STOPPED, stop_reason="rollout", finished_at=AT - 9))
    assert (stopped.verdict, stopped.reason) == (Verdict.STOPPED, "stopped on request (rollout)")
    assert verdict(running(state=State.SUPERSEDED)).verdict == Verdict.STOPPED


def test_a_newer_deployment_without_status_is_starting_or_failed_to_start() -> None:
    assert verdict(None).verdict == Verdict.NOT_DEPLOYED
    launching = verdict(running(state=State.STOPPED), deployment_id="d-2", deployment_state="submitted")
    assert launching.verdict == Verdict.STARTING
    gave_up = verdict(None, deployment_id="d-2", deployment_state=NOT_LAUNCHED, deployed_at=AT - 3)
    assert (gave_up.verdict, gave_up.since) == (Verdict.FAILED_TO_START, AT - 3)


def test_starting_and_stopping() -> None:
    assert verdict(running(state=State.STARTING, query_id=None)).verdict == Verdict.STARTING
    assert verdict(running(query_id=None)).verdict == Verdict.HEALTHY  # a record that names no query
    assert verdict(running(state=State.STOPPING, stop_reason="x")).verdict == Verdict.STOPPING


def _kafka_event(second: int, behind: float | None) -> dict[str, Any]:
    stamp = datetime.fromtimestamp(AT - 100 + second, UTC).isoformat().replace("+00:00", "Z")
    metrics = {} if behind is None else {"maxOffsetsBehindLatest": str(behind), "avgOffsetsBehindLatest": "1.0"}
    return {"timestamp": stamp, "sources": [{"description": "KafkaV2", "metrics": metrics}]}


def test_a_growing_backlog_is_lagging_and_a_shrinking_one_is_not() -> None:
    growing = [_kafka_event(i, 100 * (i + 1)) for i in range(LAG_BATCHES)]
    health = verdict(running(), events=growing)
    assert health.verdict == Verdict.LAGGING and health.since == AT - 100
    assert "from 100 to 500 offsets" in health.reason
    dipped = growing[:2] + [_kafka_event(2, 50)] + growing[3:]
    assert verdict(running(), events=dipped).verdict == Verdict.HEALTHY
    assert verdict(running(), events=growing[1:]).verdict == Verdict.HEALTHY  # too few batches to say
    assert verdict(running(), events=[_kafka_event(i, None) for i in range(9)]).verdict == Verdict.HEALTHY


def test_an_exit_record_from_any_host_ends_liveness_at_once() -> None:
    status = running(heartbeat_at=time.time())  # a fresh heartbeat
    record = DriverExit(deployment_id="d-1", host="worker-b", exited_at=AT)
    judged = liveness(status, exited=record)
    assert not judged.live and "host worker-b recorded" in judged.reason
    assert liveness(status, exited=record.but(deployment_id="d-0")).live  # an earlier deployment's exit
    assert verdict(status, judged).verdict == Verdict.CRASHED


def test_limits_follow_the_trigger_unless_the_spec_sets_them() -> None:
    assert Limits.of(None) == Limits(300.0, 120.0, 2.0)
    slow = Limits.of({"trigger": {"processing_time": "1 minute"}})
    assert slow == Limits(600.0, 600.0, 120.0)
    given = Limits.of({"health": {"batch_stalled_after": "3 seconds", "no_batch_after": "1 minute"}})
    assert given == Limits(3.0, 60.0)
    assert HealthSpec().limits_s(Trigger(processing_time="100 milliseconds")) == (300.0, 120.0)


def test_bad_health_limits_are_refused_by_field() -> None:
    with pytest.raises(SpecError, match=r"health\.batch_stalled_after: 'soon' does not start with a number"):
        parse_spec(rate_noop(health={"batch_stalled_after": "soon"}))
    with pytest.raises(SpecError, match=r"health\.no_batch_after: '0 seconds' must be above 0 ms"):
        parse_spec(rate_noop(health={"no_batch_after": "0 seconds"}))
    assert parse_spec(rate_noop(health={"no_batch_after": "2 minutes"})).health_settings.no_batch_after == "2 minutes"
