"""Advice for each case the source documents reason about, from hand-made logs with exact figures."""

from __future__ import annotations

from airflow_async_stream.insight.advice import RerunLimits, advise
from airflow_async_stream.insight.report import build_report
from tests.unit.helpers import batch_events, configuration

KAFKA = {"sink": {"format": "kafka"}}


def kinds(advice: list[dict]) -> list[str]:
    return [a["kind"] for a in advice]


def sync_then_async(sync_om: float, interval_ms: int, every_s: float = 1.0, async_latency: float = 80.0) -> list[dict]:
    """30 synchronous batches of 200 ms with ``sync_om`` of offset management, then 20 async ones."""
    sync = batch_events([200.0] * 30, [sync_om] * 30, conf=configuration(False), every_s=every_s)
    return sync + batch_events(
        [async_latency] * 20,
        [1.0] * 20,
        start=1_800_000_100.0,
        first_batch=30,
        run="r2",
        conf=configuration(True, interval_ms),
        every_s=every_s,
    )


def test_a_high_share_on_a_stateless_kafka_job_advises_turning_it_on_with_the_saving() -> None:
    report = build_report(batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False)))
    (advice,) = advise(report, KAFKA)
    assert advice["kind"] == "turn_on"
    assert advice["figures"] == {
        "share": 0.6,
        "offset_management_ms": 120.0,
        "p50_ms": 200.0,
        "expected_saving_ms": 120.0,
    }
    assert "exactly-once end to end" in advice["gives_up"]
    rate = 1900 / 19  # the rows of the 19 batches after the first, over the 19 s from the first's start to the last's
    assert f"about {rate:,.0f} rows at {rate:,.0f} rows/s" in advice["gives_up"]  # the default 1 s of input


def test_turning_it_on_for_a_job_whose_sink_is_not_known_says_what_to_check() -> None:
    report = build_report(batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False)))
    for spec in (None, {"application": "/jobs/own.py"}):
        (advice,) = advise(report, spec)
        assert advice["kind"] == "turn_on" and "check the query is stateless and writes to Kafka" in advice["summary"]
    assert "check the query" not in advise(report, KAFKA)[0]["summary"]


def test_a_high_share_on_a_sink_spark_refuses_says_why_it_stays_off() -> None:
    report = build_report(batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False)))
    (advice,) = advise(report, {"sink": {"format": "parquet"}})
    assert advice["kind"] == "keep_off" and "sink 'parquet'" in advice["summary"]


def test_a_low_share_advises_nothing_while_sync_and_turning_it_off_while_async() -> None:
    assert advise(build_report(batch_events([200.0] * 20, [10.0] * 20, conf=configuration(False))), KAFKA) == []
    (advice,) = advise(build_report(sync_then_async(10.0, 1000)), KAFKA)
    assert advice["kind"] == "turn_off"
    assert advice["figures"] == {"share": 0.05, "offset_management_ms": 10.0}
    assert "safe-disable migration" in advice["how"]


def test_an_async_job_that_is_not_eligible_is_told_to_turn_it_off_and_why() -> None:
    (advice,) = advise(build_report(sync_then_async(120.0, 1000)), {"sink": {"format": "kafka"}, "stateful": True})
    assert advice["kind"] == "turn_off" and "stateful" in advice["summary"]


def test_async_batches_alone_cannot_judge_the_saving() -> None:
    report = build_report(batch_events([80.0] * 20, [1.0] * 20, conf=configuration(True, 1000)))
    assert kinds(advise(report, KAFKA)) == ["measure"]


def test_offset_writes_that_cannot_keep_up_advise_a_longer_interval() -> None:
    # interval 0: every batch writes durably; 10 batches a second at 120 ms each keep the writes busy
    report = build_report(sync_then_async(120.0, 0, every_s=0.1))
    (advice,) = advise(report, KAFKA)
    writes = 20 / (19 * 0.1 + 0.08)
    assert advice["kind"] == "interval"
    assert advice["figures"]["writes_per_s"] == round(writes, 2)
    assert advice["figures"]["load"] == round(writes * 0.12, 3)
    assert advice["figures"]["suggested_interval_ms"] == 300  # twice the write's cost, in 100 ms steps
    # the same job at a 3 s interval writes a third of a time a second: no backlog
    assert advise(build_report(sync_then_async(120.0, 3000, every_s=0.1)), KAFKA) == []


def test_async_batches_as_slow_as_synchronous_ones_have_given_the_benefit_back() -> None:
    (advice,) = advise(build_report(sync_then_async(120.0, 3000, async_latency=190.0)), KAFKA)
    assert advice["kind"] == "interval"
    assert advice["figures"]["async_p50_ms"] == 190.0 and advice["figures"]["sync_p50_ms"] == 200.0


def test_a_re_run_over_the_users_limit_advises_a_shorter_interval() -> None:
    report = build_report(sync_then_async(120.0, 3000))  # 100 rows a batch, a batch a second
    assert advise(report, KAFKA, RerunLimits(max_rerun_rows=1000)) == []  # 3 s of input: about 300 rows
    (advice,) = advise(report, KAFKA, RerunLimits(max_rerun_rows=150))
    rate = 1900 / 19  # 100 rows a batch, a batch a second: the source's rate
    assert advice["figures"]["rerun_rows"] == round(rate * 3)
    assert advice["figures"]["suggested_interval_ms"] == int(150 / rate * 1000) // 100 * 100
    (advice,) = advise(report, KAFKA, RerunLimits(max_rerun_s=2))
    assert advice["figures"]["suggested_interval_ms"] == 2000


def test_a_stateful_query_is_pointed_at_state_checkpointing() -> None:
    heavy = batch_events([500.0] * 5, [50.0] * 5, conf=configuration(False), state=[(9600, 64, 10)] * 5)
    (advice,) = advise(build_report(heavy), KAFKA)
    assert advice["kind"] == "state_checkpointing"
    assert advice["figures"]["commit_ms_per_task"] == 150.0 and advice["figures"]["commit_share"] == 0.3
    assert advice["figures"]["worth"] is True and "changelogCheckpointing" in advice["how"]
    light = batch_events([500.0] * 5, [50.0] * 5, conf=configuration(False), state=[(640, 64, 10)] * 5)
    (advice,) = advise(build_report(light), KAFKA)
    assert advice["figures"]["worth"] is False and "little to gain" in advice["summary"]


def test_a_job_in_real_time_mode_is_told_async_cannot_run_there() -> None:
    real_time = {**configuration(False), "trigger": {"real_time": "5 seconds"}}
    report = build_report(batch_events([200.0] * 20, [120.0] * 20, conf=real_time))
    (advice,) = advise(report, KAFKA)
    assert advice["kind"] == "keep_off" and "its trigger is real time" in advice["summary"]


def every_text(advice: list[dict]) -> str:
    return " ".join(str(a.get(k, "")) for a in advice for k in ("summary", "gives_up", "how"))


def test_advice_cites_public_documents_by_title_never_a_seed_number() -> None:
    """It cited "seed 001"/"seed 004", which no user can look up."""
    from airflow_async_stream.insight.documents import SOURCES

    texts = [
        every_text(advise(build_report(batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False))), KAFKA)),
        every_text(advise(build_report(sync_then_async(5.0, 3000)), KAFKA)),
        every_text(
            advise(build_report(sync_then_async(120.0, 100, every_s=0.1)), KAFKA, RerunLimits(max_rerun_rows=1))
        ),
    ]
    assert all("seed" not in text for text in texts), texts
    assert SOURCES["databricks"] in texts[0] and SOURCES["databricks"] in texts[1]


def test_turning_it_off_offers_the_switch_in_place_beside_the_migration() -> None:
    (advice,) = [a for a in advise(build_report(sync_then_async(5.0, 3000)), KAFKA) if a["kind"] == "turn_off"]
    assert "`airflow-async-stream switch JOB --set async_progress.enabled=false --require-sync-safe`" in advice["how"]
    assert "safe-disable migration" in advice["how"]


def test_after_it_was_turned_off_the_advice_to_turn_it_on_says_so() -> None:
    """Right after a migration turned async off, the advice was to turn it on again without a word of why it was off."""
    events = batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False))
    events += batch_events(
        [80.0] * 20, [1.0] * 20, start=1_800_000_020.0, first_batch=20, run="r2", conf=configuration(True, 0)
    )
    events += batch_events(
        [200.0] * 20, [120.0] * 20, start=1_800_000_040.0, first_batch=40, run="r3", conf=configuration(False)
    )
    (advice,) = advise(build_report(events), KAFKA)
    assert advice["kind"] == "turn_on" and advice["figures"]["turned_off_at_batch"] == 40
    assert advice["summary"].startswith(
        "it was turned off at batch 40 (switch): if that was for exactly-once "
        "delivery end to end, keep it off; else turn async progress tracking on"
    )
    (fresh,) = advise(build_report(events[:20]), KAFKA)  # never async: nothing to say of why it is off
    assert (
        fresh["summary"].startswith("turn async progress tracking on") and "turned_off_at_batch" not in fresh["figures"]
    )
