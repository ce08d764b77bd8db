"""The tuner's next step for one job, decided from what it measured, in the source documents' terms.

- Turn on (``try``): a stateless job whose sink async allows, synchronous now, whose offset management
  (``walCommit + commitOffsets``, durable) is at least ``min_saving`` of a synchronous batch at p50: that is the
  saving async can give ("What is asynchronous progress tracking?"). The interval is the smallest (0, or a
  multiple of 100 ms) at which durable offset writes keep busy at most half of each second, never above
  ``max_rerun_seconds``: a failure re-runs up to the interval's worth of input.
- Keep or revert: after ``measure_batches`` async batches, keep when the p50 saving against the synchronous
  baseline reaches ``min_saving``; else raise the interval once when the writes cannot keep up (a backlog
  gives the benefit back), or go back through the safe-disable migration (``revert``).
- Probe: kept async whose interval is delegated tries the longest interval ``max_rerun_seconds`` allows once,
  and keeps it when p50 falls at least a further 10 %: every durable write still costs the batch it comes with
  some latency (measured here: p50 56 ms at 0, 30 ms at 3000 ms, 1 batch a second), and a failure re-runs
  more (the documents' trade-off, bounded by the user). At most three changes a trial.
- Re-tune (``retune``): a kept job whose writes now build a backlog, or whose interval is over the re-run bound.
- Sample (``sample``): async on and no synchronous baseline to judge it by: the migration to synchronous, then
  measure. A trial's own steps follow each other at once; a new trial waits ``at_most_every``.
"""

from __future__ import annotations

from airflow_async_stream.autotune.judge import judge
from airflow_async_stream.autotune.look import TunerAct, TunerStep, TunerView, running, spec_key
from airflow_async_stream.autotune.settle import settled_async, settled_sync

__all__ = ["decide"]


def decide(look: TunerView) -> TunerStep:
    """The next step for one job (see the module docstring)."""
    trial = look.tuning.trial
    if trial is not None:  # a job stopped, crashed or unhealthy during its trial: the trial ends, nothing changed
        return judge(look, trial) if not look.blocked else TunerStep(TunerAct.ABORT, f"the trial ends: {look.blocked}")
    if look.blocked:
        return TunerStep(TunerAct.SKIP, look.blocked)
    progress = look.spec.async_progress
    if not progress.auto:
        return TunerStep(TunerAct.SKIP, "no async field is delegated (auto): the spec pins them")
    since = look.tuning.last_trial_at
    every = look.spec.autotune_settings.at_most_every_s()
    if since is not None and look.now - since < every:
        return TunerStep(
            TunerAct.WAIT,
            f"the last trial began {look.now - since:.0f} s ago; the next waits "
            f"autotune.at_most_every ({look.spec.autotune_settings.at_most_every})",
        )
    if look.tuning.reverted_under == spec_key(look.spec) and progress.delegated("enabled"):
        return TunerStep(TunerAct.NOTHING, "async was reverted under this spec: tried again when the spec changes")
    return settled_async(look) if running(look)["enabled"] else settled_sync(look)
