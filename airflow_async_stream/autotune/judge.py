"""The tuner's step while a trial is under way: abort when someone else changed the job, wait for its window,
then keep it (after one probe of the longest interval allowed), raise the interval once, or go back (decide.py
has the reasoning)."""

from __future__ import annotations

from dataclasses import replace

from airflow_async_stream.autotune.look import (
    MAX_TRIAL_CHANGES,
    TunerAct,
    TunerStep,
    TunerView,
    bound_ms,
    current,
    running,
)
from airflow_async_stream.autotune.measure import Window, matches
from airflow_async_stream.autotune.settle import raise_interval, revert, turn_on
from airflow_async_stream.insight.groups import describe
from airflow_async_stream.state.tuning import Trial

__all__ = ["PROBE_GAIN", "judge"]

#: How much further p50 must fall at the longest interval allowed to keep it over the shorter one (whose
#: failure re-runs less).
PROBE_GAIN = 0.10


def judge(look: TunerView, trial: Trial) -> TunerStep:
    """The step a trial's window says, or ABORT when the job no longer runs what the tuner set."""
    if look.deployment_id != trial.deployment_id or not matches(look.configuration, trial.configuration):
        return TunerStep(
            TunerAct.ABORT,
            f"the job was changed during the trial (it runs {describe(look.configuration)} as "
            f"deployment {look.deployment_id}; the tuner set {describe(trial.configuration)} on deployment "
            f"{trial.deployment_id}): left as it is, no change of the tuner's",
        )
    if trial.query_run_id and look.query_run_id and look.query_run_id != trial.query_run_id:
        return TunerStep(
            TunerAct.ABORT,
            f"the job's query was started again during the trial (query run {look.query_run_id}, "
            f"not the tuner's {trial.query_run_id}: a switch or a restart of its query): left as it is, no "
            "change of the tuner's",
        )
    window, seen = current(look, since=trial.at)
    if window is None:
        n = look.spec.autotune_settings.measure_batches
        return TunerStep(TunerAct.WAIT, f"measuring {describe(trial.configuration)}: {seen} of {n} batches")
    if trial.kind == "sample":
        return turn_on(look, window)
    if trial.kind == "probe" or trial.baseline is None:
        return _against_previous(look, trial, window)
    base = Window(**trial.baseline)
    saving = 1 - window.p50_ms / base.p50_ms
    minimum = look.spec.autotune_settings.min_saving
    if saving >= minimum:
        interval = running(look)["checkpoint_interval_ms"]
        kept = TunerStep(
            TunerAct.KEEP,
            f"kept async at {interval} ms: it saves {saving:.0%} of p50 against synchronous "
            f"({window.p50_ms:.0f} against {base.p50_ms:.0f} ms), at least autotune.min_saving {minimum:.0%}",
            before=base,
            after=window,
            saving=saving,
        )
        return _probe(look, trial, kept) or kept
    if look.spec.async_progress.delegated("checkpoint_interval_ms") and trial.changes < MAX_TRIAL_CHANGES - 1:
        higher = raise_interval(look, base, window)
        if higher is not None:
            return replace(higher, saving=saving)
    if look.spec.async_progress.delegated("enabled"):
        return revert(look, base, window, saving)
    return _back(look, trial, f"it saves {saving:.0%} of p50 against synchronous, under autotune.min_saving", window)


def _probe(look: TunerView, trial: Trial, kept: TunerStep) -> TunerStep | None:
    """Async that saves enough at its interval: one probe of the longest interval ``max_rerun_seconds`` allows,
    when the interval is delegated (each durable write costs the batch it comes with some latency here)."""
    interval, bound = running(look)["checkpoint_interval_ms"], int(bound_ms(look.spec) // 100 * 100)
    delegated = look.spec.async_progress.delegated("checkpoint_interval_ms")
    if not delegated or bound <= interval or trial.changes >= MAX_TRIAL_CHANGES - 1:
        return None
    return replace(
        kept,
        act=TunerAct.RETUNE,
        to={"enabled": True, "checkpoint_interval_ms": bound},
        trial="probe",
        reason=f"probe the checkpoint interval {bound} ms (the longest autotune.max_rerun_seconds allows): "
        f"{kept.reason.removeprefix('kept ')}; fewer durable writes may save more, kept only if p50 "
        f"falls at least {PROBE_GAIN:.0%} more",
    )


def _against_previous(look: TunerView, trial: Trial, window: Window) -> TunerStep:
    """A probe (or an interval trial with no synchronous baseline: async pinned on), against the window before
    it: kept when p50 fell at least PROBE_GAIN (a probe) or did not rise, else back to the interval before."""
    previous = Window(**trial.previous) if trial.previous else None
    interval = running(look)["checkpoint_interval_ms"]
    if previous is None:
        return TunerStep(TunerAct.KEEP, f"kept the interval {interval} ms: p50 {window.p50_ms:.0f} ms", after=window)
    gain = 1 - window.p50_ms / previous.p50_ms
    wanted = PROBE_GAIN if trial.kind == "probe" else -0.05
    change = f"{gain:.0%} lower" if gain >= 0 else f"{-gain:.0%} higher"
    figures = f"p50 {window.p50_ms:.0f} ms against {previous.p50_ms:.0f} ms at the interval before ({change})"
    if gain >= wanted:
        return TunerStep(
            TunerAct.KEEP,
            f"kept async at {interval} ms: {figures}; a failure re-runs up to {interval} ms of input",
            before=previous,
            after=window,
        )
    return _back(look, previous, f"{figures}, not worth the longer re-run after a failure", window)


def _back(look: TunerView, previous: Window | Trial, why: str, window: Window) -> TunerStep:
    """Back to the interval before: the window's (a probe) or the trial's start (an interval trial)."""
    configuration = previous.configuration if isinstance(previous, Window) else previous.before
    before = (configuration.get("async_progress") or {}).get("checkpoint_interval_ms")
    return TunerStep(
        TunerAct.RETUNE,
        f"back to the checkpoint interval {before} ms: {why}",
        to={"enabled": True, "checkpoint_interval_ms": before},
        after=window,
        trial="back",
    )
