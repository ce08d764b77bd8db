"""The driver's OpenLineage run: START, RUNNING with what ran since the one before, COMPLETE or FAIL; a transport
that fails or hangs never holds a batch (no Spark: batches are fed as the listener feeds them)."""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from airflow_async_stream.lineage.link import RunningSettings
from airflow_async_stream.lineage.running import QUEUE_MAX, RunningEvents, every_s, running_events
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import Redactor
from tests.helpers import rate_noop, until
from tests.lineage_receiver import lineage_receiver

SPEC = parse_spec(rate_noop("clicks", async_progress={"enabled": True}))
PARENT = {
    "namespace": "airflow",
    "job_name": "d.deploy",
    "run_id": "01937a2b-0000-7000-8000-0000000000aa",
    "root_job_name": "d",
    "root_run_id": "01937a2b-0000-7000-8000-0000000000bb",
}


def batch(batch_id: int, rows: int = 10, latency_ms: int = 40) -> dict[str, Any]:
    return {"batch_id": batch_id, "num_input_rows": rows, "duration_ms": {"triggerExecution": latency_ms}}


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []

    def __call__(self, event: Any) -> None:
        self.events.append(event)

    def kinds(self) -> list[str]:
        return [e.eventType.value for e in self.events]


def test_a_run_starts_reports_what_ran_since_the_last_event_and_completes() -> None:
    sent = Recorder()
    run = RunningEvents(SPEC, RunningSettings(namespace="airflow", parent=PARENT), 0.2, Redactor(), emit=sent)
    run.started()
    run.started()  # a switch in place continues the same run
    for batch_id in range(3):
        run.batch(batch(batch_id, latency_ms=30 + 10 * batch_id))
    until(lambda: "RUNNING" in sent.kinds())
    run.batch(batch(3, rows=5))
    run.ended("stopped")
    kinds = sent.kinds()
    assert kinds[0] == "START" and kinds[-1] == "COMPLETE" and kinds.count("START") == 1
    assert set(kinds[1:-1]) == {"RUNNING"}
    progress = [e.run.facets["asyncStream_progress"] for e in sent.events[1:]]
    assert sum(p.batches for p in progress) == 4 and sum(p.rows for p in progress) == 35
    first = next(p for p in progress if p.batches)
    assert (first.batches, first.latency_ms_p50, first.latency_ms_max, first.last_batch_id) == (3, 40.0, 50.0, 2)
    assert progress[-1].last_batch_id == 3
    assert len({e.run.runId for e in sent.events}) == 1
    start = sent.events[0]
    assert start.job.name == "async-stream-clicks" and start.job.namespace == "airflow"
    assert start.run.facets["parent"].run.runId == PARENT["run_id"]
    assert start.run.facets["parent"].root.job.name == "d"
    assert start.job.facets["jobType"].processingType == "STREAMING"
    assert start.job.facets["asyncStream_configuration"].async_progress["enabled"] is True


def test_after_a_switch_in_place_the_same_run_carries_the_new_configuration() -> None:
    sent = Recorder()
    run = RunningEvents(SPEC, RunningSettings(), 3600, Redactor(), emit=sent)
    run.started()
    run.switched(parse_spec(rate_noop("clicks", async_progress={"enabled": False})))
    run.ended("stopped")
    configs = [e.job.facets["asyncStream_configuration"].async_progress["enabled"] for e in sent.events]
    assert configs == [True, False] and len({e.run.runId for e in sent.events}) == 1


def test_a_failed_run_ends_with_fail_and_its_error_redacted() -> None:
    sent = Recorder()
    run = RunningEvents(SPEC, RunningSettings(), 3600, Redactor(["s3cret-jaas"]), emit=sent)
    run.started()
    run.ended("failed", "KafkaException: login s3cret-jaas refused")
    assert sent.kinds() == ["START", "FAIL"]
    assert sent.events[-1].run.facets["errorMessage"].message == "KafkaException: login *** refused"


def test_a_hanging_transport_never_holds_a_batch_and_the_waiting_events_are_capped() -> None:
    release = threading.Event()
    calls = []

    def hang(event: Any) -> None:
        calls.append(event)
        release.wait()

    run = RunningEvents(SPEC, RunningSettings(), 0.001, Redactor(), emit=hang)
    run.started()
    until(lambda: calls)  # the sending thread is stuck in the transport
    began = time.monotonic()
    for batch_id in range(10_000):
        run.batch(batch(batch_id))
    assert time.monotonic() - began < 2.0  # counters only: 10,000 batches in well under a batch's time each
    for _ in range(QUEUE_MAX * 3):  # events the transport cannot take are dropped oldest first
        run._put(run._event("RUNNING"))
    assert run._queue.qsize() <= QUEUE_MAX and run._dropped >= QUEUE_MAX * 2
    release.set()
    run.ended("stopped")


def test_a_failing_transport_is_logged_once_per_failure_streak(caplog: pytest.LogCaptureFixture) -> None:
    outcomes = iter([None, OSError("down"), OSError("down"), OSError("down"), None, OSError("down again")])

    def flaky(event: Any) -> None:
        failure = next(outcomes, None)
        if failure:
            raise failure

    run = RunningEvents(SPEC, RunningSettings(), 3600, Redactor(), emit=flaky)
    with caplog.at_level(logging.INFO, logger="airflow_async_stream.lineage.running"):
        for _ in range(6):
            run._deliver(run._event("RUNNING"))
    lines = [r.getMessage() for r in caplog.records]
    assert len([line for line in lines if "transport failed" in line]) == 2, lines
    assert len([line for line in lines if "go out again after 3 failed" in line]) == 1, lines
    assert run.sent == {"RUNNING": 2}


def test_how_often_the_spec_wins_over_the_provider() -> None:
    provider = RunningSettings(every_minutes=5)
    assert every_s(SPEC, provider) == 300
    assert every_s(SPEC, None) == 0 and running_events(SPEC, None, Redactor()) is None
    own = parse_spec(rate_noop("c", lineage={"running_every_minutes": 0.5}))
    assert every_s(own, provider) == 30 and every_s(own, None) == 30
    off = parse_spec(rate_noop("c", lineage={"running_every_minutes": 0}))
    assert every_s(off, provider) == 0


@pytest.fixture
def receiver() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    with lineage_receiver() as found:
        yield found


def test_events_go_out_through_the_openlineage_clients_http_transport(receiver: tuple[str, list]) -> None:
    url, received = receiver
    transport = {"type": "http", "url": url, "auth": {"type": "api_key", "apiKey": "ol-key-3e1"}}
    own = parse_spec(rate_noop("clicks", lineage={"running_every_minutes": 0.005}))  # 0.3 s
    run = running_events(own, RunningSettings(namespace="streams", parent=PARENT, transport=transport), Redactor())
    assert run is not None and run.every_s == pytest.approx(0.3)
    run.started()
    run.batch(batch(0))
    until(lambda: any(r["event"]["eventType"] == "RUNNING" for r in received))
    run.ended("stopped")
    kinds = [r["event"]["eventType"] for r in received]
    assert kinds[0] == "START" and kinds[-1] == "COMPLETE" and "RUNNING" in kinds
    assert {r["auth"] for r in received} == {"Bearer ol-key-3e1"}
    assert "ol-key-3e1" not in json.dumps([r["event"] for r in received])
    running = next(r["event"] for r in received if r["event"]["eventType"] == "RUNNING")
    assert running["job"] == {**running["job"], "namespace": "streams", "name": "async-stream-clicks"}
    assert running["run"]["facets"]["asyncStream_progress"]["batches"] == 1
    assert running["run"]["facets"]["parent"]["job"]["name"] == "d.deploy"


def test_an_unreachable_transport_never_fails_the_run(caplog: pytest.LogCaptureFixture) -> None:
    transport = {"type": "http", "url": "http://127.0.0.1:9", "timeout": 0.5, "retry": {"total": 0}}
    own = parse_spec(rate_noop("clicks", lineage={"running_every_minutes": 60}))
    run = running_events(own, RunningSettings(transport=transport), Redactor())
    assert run is not None
    with caplog.at_level(logging.WARNING, logger="airflow_async_stream.lineage.running"):
        run.started()
        run.batch(batch(0))
        run.ended("stopped")
    assert run.sent == {}
    assert len([r for r in caplog.records if "transport failed" in r.getMessage()]) == 1
