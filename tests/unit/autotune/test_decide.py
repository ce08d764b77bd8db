"""The tuner's decisions from measured windows (no Spark: progress events as the driver records them)."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.autotune.decide import decide
from airflow_async_stream.autotune.look import TunerAct, TunerView, interval_for
from airflow_async_stream.autotune.measure import measure
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.tuning import Trial, Tuning
from tests.helpers import rate_noop
from tests.unit.helpers import batch_events, configuration

T0 = 1_800_000_000.0
AUTO = {"enabled": "auto", "checkpoint_interval_ms": "auto"}
BOUNDS = {"measure_batches": 10, "at_most_every": "1 hour", "min_saving": 0.2, "max_rerun_seconds": 5}


def spec(async_progress: dict[str, Any] | None = None, **changes: Any) -> Any:
    return parse_spec(
        rate_noop(
            trigger={"processing_time": "100 milliseconds"},
            autotune=BOUNDS,
            async_progress=async_progress or AUTO,
            **changes,
        )
    )


def look(events: list[dict[str, Any]], conf: dict[str, Any], tuning: Tuning | None = None, **changes: Any) -> TunerView:
    return TunerView(spec(**changes), "d1", conf, events, tuning or Tuning(), T0 + 1000, None)


def sync_batches(latency: float, managed: float, n: int = 12, **kw: Any) -> list[dict[str, Any]]:
    return batch_events([latency] * n, [managed] * n, start=T0, every_s=1.0, conf=configuration(False), **kw)


def test_a_window_leaves_out_each_query_start_and_counts_each_batch_once() -> None:
    events = sync_batches(200, 120, n=5) + sync_batches(200, 120, n=5, first_batch=4, run="r2")
    window, seen = measure(events, deployment_id="d1", wanted=configuration(False), batches=3)
    assert seen == 7  # ids 0-8; 0 and 4 (in its second run) start a query; 4's re-run counts once
    assert window is not None and (window.first_batch, window.last_batch) == (6, 8)


def test_too_few_synchronous_batches_waits_for_a_baseline() -> None:
    step = decide(look(sync_batches(200, 120, n=6), configuration(False)))
    assert step.act == TunerAct.WAIT and "5 of 10" in step.reason


def test_offset_management_worth_it_turns_async_on_at_the_computed_interval() -> None:
    step = decide(look(sync_batches(200, 120), configuration(False)))
    assert step.act == TunerAct.TRY and step.trial == "on", step.reason
    assert step.to == {"enabled": True, "checkpoint_interval_ms": 0}  # 1 write/s x 120 ms: 12 % busy
    assert "60% of a synchronous batch" in step.reason and "a failure re-runs" in step.reason


def test_writes_that_could_not_keep_up_at_every_batch_get_an_interval_within_the_rerun_bound() -> None:
    assert interval_for(120, batches_per_s=8, bound_ms=5000) == 300  # 2 x 120 ms, rounded up
    assert interval_for(4000, batches_per_s=8, bound_ms=5000) == 5000  # never above the bound
    assert interval_for(120, batches_per_s=1, bound_ms=5000, at_least=800) == 800


def test_a_small_share_leaves_the_job_synchronous() -> None:
    step = decide(look(sync_batches(900, 40), configuration(False)))
    assert step.act == TunerAct.NOTHING and step.reason.startswith("left synchronous"), step.reason


def test_pinned_fields_are_never_touched() -> None:
    step = decide(look(sync_batches(200, 120), configuration(False), async_progress={"enabled": False}))
    assert step.act == TunerAct.SKIP and "pins" in step.reason


def test_exactly_once_or_a_sink_async_refuses_keeps_it_off() -> None:
    once = decide(look(sync_batches(200, 120), configuration(False), delivery="exactly_once"))
    assert once.act == TunerAct.NOTHING and "delivery" in once.reason
    parquet = {"format": "parquet", "options": {"path": "/out"}}
    assert "sink.format" in decide(look(sync_batches(200, 120), configuration(False), sink=parquet)).reason


def test_async_on_without_a_baseline_is_sampled_through_the_migration() -> None:
    events = batch_events([80] * 12, [5] * 12, start=T0, conf=configuration(True, 0))
    step = decide(look(events, configuration(True, 0)))
    assert step.act == TunerAct.SAMPLE and step.to == {"enabled": False, "checkpoint_interval_ms": 0}


def on_trial(base_latency: float = 200) -> Tuning:
    base, _ = measure(sync_batches(base_latency, 120), deployment_id="d1", wanted=configuration(False), batches=10)
    assert base is not None
    trial = Trial(
        kind="on",
        at=T0 + 100,
        deployment_id="d1",
        before=configuration(False),
        configuration=configuration(True, 0),
        baseline=base.to_json(),
    )
    return Tuning(trial=trial, last_trial_at=T0 + 99)


def async_batches(latency: float, n: int = 12, interval: int = 0, every_s: float = 1.0) -> list[dict[str, Any]]:
    return batch_events(
        [latency] * n,
        [3] * n,
        start=T0 + 101,
        every_s=every_s,
        first_batch=100,
        run="r2",
        conf=configuration(True, interval),
    )


def test_a_trial_that_saves_enough_is_kept_where_the_interval_is_pinned() -> None:
    pinned = {"enabled": "auto", "checkpoint_interval_ms": 0}
    step = decide(
        look(sync_batches(200, 120) + async_batches(80), configuration(True, 0), on_trial(), async_progress=pinned)
    )
    assert step.act == TunerAct.KEEP and step.saving == 0.6, step.reason


def test_a_trial_that_saves_enough_probes_the_longest_interval_allowed_once() -> None:
    step = decide(look(sync_batches(200, 120) + async_batches(80), configuration(True, 0), on_trial()))
    assert step.act == TunerAct.RETUNE and step.trial == "probe" and step.saving == 0.6, step.reason
    assert step.to == {"enabled": True, "checkpoint_interval_ms": 5000} and step.after is not None


def probing(p50_before: float) -> Tuning:
    before, _ = measure(async_batches(p50_before), deployment_id="d1", wanted=configuration(True, 0), batches=10)
    tuning = on_trial()
    assert tuning.trial is not None and before is not None
    trial = tuning.trial.but(
        kind="probe", at=T0 + 200, configuration=configuration(True, 5000), previous=before.to_json(), changes=2
    )
    return tuning.but(trial=trial)


def probe_batches(latency: float) -> list[dict[str, Any]]:
    return batch_events(
        [latency] * 12, [3] * 12, start=T0 + 201, first_batch=200, run="r3", conf=configuration(True, 5000)
    )


def test_a_probe_that_saves_a_further_tenth_is_kept_else_the_shorter_interval_comes_back() -> None:
    kept = decide(look(probe_batches(60), configuration(True, 5000), probing(80)))
    assert kept.act == TunerAct.KEEP and "kept async at 5000 ms" in kept.reason, kept.reason
    back = decide(look(probe_batches(76), configuration(True, 5000), probing(80)))
    assert back.act == TunerAct.RETUNE and back.trial == "back", back.reason
    assert back.to == {"enabled": True, "checkpoint_interval_ms": 0} and "not worth the longer re-run" in back.reason


def test_a_trial_that_saves_too_little_is_reverted_through_the_migration() -> None:
    step = decide(look(sync_batches(200, 120) + async_batches(190), configuration(True, 0), on_trial()))
    assert step.act == TunerAct.REVERT and "safe-disable migration" in step.reason, step.reason
    assert step.to == {"enabled": False, "checkpoint_interval_ms": 0}


def test_a_trial_whose_writes_build_a_backlog_raises_the_interval_once() -> None:
    fast = async_batches(190, n=40, every_s=0.125)  # 8 batches/s x 120 ms durable writes at interval 0
    step = decide(look(sync_batches(200, 120) + fast, configuration(True, 0), on_trial()))
    assert step.act == TunerAct.RETUNE and step.to == {"enabled": True, "checkpoint_interval_ms": 300}, step.reason


def test_a_trial_is_measured_before_it_is_judged() -> None:
    step = decide(look(sync_batches(200, 120) + async_batches(80, n=5), configuration(True, 0), on_trial()))
    assert step.act == TunerAct.WAIT and "4 of 10" in step.reason


def test_a_change_by_someone_else_during_a_trial_aborts_it_without_a_change() -> None:
    step = decide(look(sync_batches(200, 120) + async_batches(80), configuration(True, 3000), on_trial()))
    assert step.act == TunerAct.ABORT and step.to is None


def test_a_new_trial_waits_at_most_every() -> None:
    tuning = Tuning(last_trial_at=T0 + 500)
    step = decide(look(sync_batches(200, 120), configuration(False), tuning))
    assert step.act == TunerAct.WAIT and "at_most_every" in step.reason


def test_a_job_stopped_during_a_trial_ends_it_without_a_change() -> None:
    stopped = look(sync_batches(200, 120) + async_batches(80, n=5), configuration(True, 0), on_trial())
    step = decide(TunerView(**{**stopped.__dict__, "blocked": "the job is not running (stopped)"}))
    assert step.act == TunerAct.ABORT and step.to is None and "not running" in step.reason


def test_a_job_async_for_longer_than_the_batches_read_is_judged_by_its_recorded_baseline() -> None:
    base, _ = measure(sync_batches(200, 120), deployment_id="d1", wanted=configuration(False), batches=10)
    assert base is not None
    kept = Tuning().with_decision(
        {"at": T0, "act": "keep", "reason": "kept", "deployment_id": "d1", "before": base.to_json()}
    )
    pinned = {"enabled": "auto", "checkpoint_interval_ms": 0}
    step = decide(look(async_batches(80), configuration(True, 0), kept, async_progress=pinned))
    assert step.act == TunerAct.NOTHING and "async kept at 0 ms: it saves 60%" in step.reason, step.reason
    other = Tuning().with_decision(
        {"at": T0, "act": "keep", "reason": "kept", "deployment_id": "d0", "before": base.to_json()}
    )
    assert decide(look(async_batches(80), configuration(True, 0), other, async_progress=pinned)).act == TunerAct.SAMPLE


def test_another_query_run_during_a_trial_aborts_it() -> None:
    tuning = on_trial()
    assert tuning.trial is not None
    tuning = tuning.but(trial=tuning.trial.but(query_run_id="r2"))
    same = look(sync_batches(200, 120) + async_batches(80, n=5), configuration(True, 0), tuning)
    assert decide(TunerView(**{**same.__dict__, "query_run_id": "r2"})).act == TunerAct.WAIT
    step = decide(TunerView(**{**same.__dict__, "query_run_id": "r3"}))
    assert step.act == TunerAct.ABORT and "started again" in step.reason and step.to is None
