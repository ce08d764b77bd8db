"""The tuner's step for a job with no trial under way: turn async on when the synchronous baseline says it
pays, sample a baseline when async runs without one, revert it when it no longer saves enough, re-tune the
interval on the backlog and re-run signals (decide.py has the reasoning)."""

from __future__ import annotations

from airflow_async_stream.autotune.look import (
    TARGET_LOAD,
    TunerAct,
    TunerStep,
    TunerView,
    baseline,
    bound_ms,
    current,
    ineligible,
    interval_for,
    load,
    running,
)
from airflow_async_stream.autotune.measure import Window
from airflow_async_stream.insight.documents import SOURCES
from airflow_async_stream.insight.interval import BACKLOG_LOAD, GIVEN_BACK, rerun_cost

__all__ = ["raise_interval", "settled_async", "settled_sync", "turn_on"]


def settled_sync(look: TunerView) -> TunerStep:
    """A synchronous job: turned on when its baseline says async pays, else left synchronous."""
    if not look.spec.async_progress.delegated("enabled"):
        return TunerStep(TunerAct.NOTHING, "async is pinned off (async_progress.enabled: false)")
    why = ineligible(look.spec, look.events)
    if why:
        return TunerStep(
            TunerAct.NOTHING, "left synchronous: async progress tracking cannot run here: " + "; ".join(why)
        )
    base, seen = baseline(look)
    if base is None:
        n = look.spec.autotune_settings.measure_batches
        return TunerStep(TunerAct.WAIT, f"measuring the synchronous baseline: {seen} of {n} batches")
    return turn_on(look, base)


def turn_on(look: TunerView, base: Window) -> TunerStep:
    """Async on at the interval the baseline gives, when offset management is at least ``min_saving``."""
    settings, spec = look.spec.autotune_settings, look.spec
    figures = (
        f"offset management (walCommit + commitOffsets) is {base.share:.0%} of a synchronous batch "
        f"(p50 {base.offset_management_ms:.0f} of {base.p50_ms:.0f} ms)"
    )
    if base.share < settings.min_saving:
        return TunerStep(
            TunerAct.NOTHING,
            f"left synchronous: {figures}, under autotune.min_saving {settings.min_saving:.0%}: "
            "async progress tracking can save no more than that",
            before=base,
        )
    if spec.async_progress.delegated("checkpoint_interval_ms"):
        interval = interval_for(base.offset_management_ms, base.batches_per_s, bound_ms(spec))
    else:
        interval = spec.async_progress.checkpoint_interval_ms
    busy = load(base, interval, base.offset_management_ms)
    return TunerStep(
        TunerAct.TRY,
        f"turn async progress tracking on at {interval} ms: {figures}, the saving async can give "
        f"({SOURCES['databricks']}); durable offset writes at that interval keep busy {busy:.0%} of each second; "
        f"a failure re-runs {rerun_cost(base.rows_per_s, interval)}",
        to={"enabled": True, "checkpoint_interval_ms": interval},
        before=base,
        trial="on",
    )


def settled_async(look: TunerView) -> TunerStep:
    """An async job: sampled when nothing judges it, reverted when it saves too little, else re-tuned or kept."""
    progress, settings = look.spec.async_progress, look.spec.autotune_settings
    interval = running(look)["checkpoint_interval_ms"]
    base, _ = baseline(look)
    if base is None:
        if progress.delegated("enabled"):
            return TunerStep(
                TunerAct.SAMPLE,
                "async is on and no synchronous batches of this deployment judge it: off "
                "through the safe-disable migration, to measure a synchronous baseline",
                to={"enabled": False, "checkpoint_interval_ms": interval},
                trial="sample",
            )
        return _bounded(look, interval) or TunerStep(TunerAct.NOTHING, "async is pinned on; no synchronous baseline")
    window, seen = current(look)
    if window is None:
        return TunerStep(
            TunerAct.WAIT, f"measuring async at {interval} ms: {seen} of {settings.measure_batches} batches"
        )
    saving = 1 - window.p50_ms / base.p50_ms
    if saving < settings.min_saving and progress.delegated("enabled"):
        return revert(look, base, window, saving)
    again = _bounded(look, interval) or raise_interval(look, base, window)
    if again is not None and progress.delegated("checkpoint_interval_ms"):
        return again
    return TunerStep(
        TunerAct.NOTHING,
        f"async kept at {interval} ms: it saves {saving:.0%} of p50 against synchronous "
        f"({window.p50_ms:.0f} against {base.p50_ms:.0f} ms)",
        before=base,
        after=window,
        saving=saving,
    )


def revert(look: TunerView, base: Window, window: Window, saving: float) -> TunerStep:
    minimum = look.spec.autotune_settings.min_saving
    return TunerStep(
        TunerAct.REVERT,
        f"turn async off: it saves {saving:.0%} of p50 against synchronous ({window.p50_ms:.0f} against "
        f"{base.p50_ms:.0f} ms), under autotune.min_saving {minimum:.0%}; off through the safe-disable migration "
        "(a synchronous restart of a checkpoint async wrote can fail with 'batch N doesn't exist')",
        to={"enabled": False, "checkpoint_interval_ms": running(look)["checkpoint_interval_ms"]},
        before=base,
        after=window,
        saving=saving,
        trial="revert",
    )


def _bounded(look: TunerView, interval: int) -> TunerStep | None:
    """A lower interval when the one running is over the re-run bound."""
    bound = bound_ms(look.spec)
    if not look.spec.async_progress.delegated("checkpoint_interval_ms") or interval <= bound:
        return None
    lower = int(bound // 100 * 100)
    return TunerStep(
        TunerAct.RETUNE,
        f"lower the checkpoint interval to {lower} ms: a failure re-runs up to {interval} ms "
        f"of input, over autotune.max_rerun_seconds ({look.spec.autotune_settings.max_rerun_seconds:g} s)",
        to={"enabled": True, "checkpoint_interval_ms": lower},
        trial="interval",
    )


def raise_interval(look: TunerView, base: Window, window: Window) -> TunerStep | None:
    """A higher interval when durable offset writes cannot keep up (a backlog gives the benefit back)."""
    interval = running(look)["checkpoint_interval_ms"]
    busy = load(window, interval, base.offset_management_ms)
    given_back = window.p50_ms >= GIVEN_BACK * base.p50_ms
    if busy < BACKLOG_LOAD and not (given_back and busy >= TARGET_LOAD / 2):
        return None  # the writes keep up: a longer interval would only make a failure re-run more
    higher = interval_for(base.offset_management_ms, window.batches_per_s, bound_ms(look.spec), at_least=interval + 100)
    if higher <= interval:
        return None
    seen = f"; async p50 {window.p50_ms:.0f} ms against synchronous {base.p50_ms:.0f} ms" if given_back else ""
    return TunerStep(
        TunerAct.RETUNE,
        f"raise the checkpoint interval to {higher} ms: durable offset writes at {interval} ms, "
        f"p50 {base.offset_management_ms:.0f} ms each, keep busy {busy:.0%} of each second, so a backlog "
        f"builds and gives the benefit back{seen} ({SOURCES['databricks']})",
        to={"enabled": True, "checkpoint_interval_ms": higher},
        before=base,
        after=window,
        trial="interval",
    )
