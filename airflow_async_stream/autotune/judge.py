"""The tuner's step while a trial is under way: abort when someone else changed the job, wait for its window,
then keep it, raise the interval once, or go back (decide.py has the reasoning)."""

from __future__ import annotations

from dataclasses import replace

from airflow_async_stream.autotune.look import MAX_TRIAL_CHANGES, Act, Look, Step, current, running
from airflow_async_stream.autotune.measure import Window, matches
from airflow_async_stream.autotune.settle import raise_interval, revert, turn_on
from airflow_async_stream.insight.groups import describe
from airflow_async_stream.state.tuning import Trial

__all__ = ["judge"]


def judge(look: Look, trial: Trial) -> Step:
    """The step a trial's window says, or ABORT when the job no longer runs what the tuner set."""
    if look.deployment_id != trial.deployment_id or not matches(look.configuration, trial.configuration):
        return Step(Act.ABORT, f"the job was changed during the trial (it runs {describe(look.configuration)} as "
                    f"deployment {look.deployment_id}; the tuner set {describe(trial.configuration)} on deployment "
                    f"{trial.deployment_id}): left as it is, no change of the tuner's")  # fmt: skip
    window, seen = current(look, since=trial.at)
    if window is None:
        n = look.spec.autotune_settings.measure_batches
        return Step(Act.WAIT, f"measuring {describe(trial.configuration)}: {seen} of {n} batches")
    if trial.kind == "sample":
        return turn_on(look, window)
    if trial.baseline is None:
        return _against_previous(look, trial, window)
    base = Window(**trial.baseline)
    saving = 1 - window.p50_ms / base.p50_ms
    minimum = look.spec.autotune_settings.min_saving
    if saving >= minimum:
        interval = running(look)["checkpoint_interval_ms"]
        return Step(Act.KEEP, f"kept async at {interval} ms: it saves {saving:.0%} of p50 against synchronous "
                    f"({window.p50_ms:.0f} against {base.p50_ms:.0f} ms), at least autotune.min_saving {minimum:.0%}",
                    before=base, after=window, saving=saving)  # fmt: skip
    if look.spec.async_progress.delegated("checkpoint_interval_ms") and trial.changes < MAX_TRIAL_CHANGES - 1:
        higher = raise_interval(look, base, window)
        if higher is not None:
            return replace(higher, saving=saving)
    if look.spec.async_progress.delegated("enabled"):
        return revert(look, base, window, saving)
    return _back(look, trial, f"it saves {saving:.0%} of p50 against synchronous, under autotune.min_saving", window)


def _against_previous(look: Look, trial: Trial, window: Window) -> Step:
    """An interval trial with no synchronous baseline (async pinned on): kept unless slower than before."""
    previous = Window(**trial.previous) if trial.previous else None
    if previous is None or window.p50_ms <= previous.p50_ms * 1.05:
        return Step(Act.KEEP, f"kept the interval: p50 {window.p50_ms:.0f} ms", before=previous, after=window)
    return _back(look, trial, f"p50 {window.p50_ms:.0f} ms against {previous.p50_ms:.0f} ms before", window)


def _back(look: Look, trial: Trial, why: str, window: Window) -> Step:
    before = (trial.before.get("async_progress") or {}).get("checkpoint_interval_ms")
    return Step(Act.RETUNE, f"back to the checkpoint interval {before} ms: {why}",
                to={"enabled": True, "checkpoint_interval_ms": before}, after=window, trial="back")  # fmt: skip
