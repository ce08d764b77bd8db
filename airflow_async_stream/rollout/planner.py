"""Compare desired and deployed state job by job; classify each difference, with the reason in words.

A field the file delegates to the tuner (``auto``) is desired at the value the job runs with (desired.py).

Actions: ``unchanged``, ``deploy`` (new job), ``retire`` (gone from the folder: graceful stop, checkpoint
kept), ``update`` (the new spec replaces the running one), ``safe_disable`` (async turned off: the
safe-disable migration; also for a synchronous job no driver runs whose checkpoint Spark cannot restart
synchronously, a crash loop after async was turned off by hand), ``refuse`` (Spark cannot restart the
changed query from the same checkpoint; left as it runs). An ``update`` or ``safe_disable`` says ``how`` its
changes are made: ``in_place`` when the running driver can switch its query (decision/needs.py decides: async
options, trigger, runtime ``spark.sql`` settings; a driver that runs the spec's query), else ``restart`` (a
graceful stop and a new driver), with the reason. A job with async on that the folder moves to real-time
mode changes twice: a ``safe_disable`` to synchronous micro-batches now (its ``follow_up`` says so), and an
``update`` into real-time mode at the next run.

What counts as ``refuse`` follows Spark's "Recovery Semantics after Changes in a Streaming Query": a
different source, a source's subscription or path, a changed checkpoint, a file sink's directory, a change
into a file sink (or out of one to anything but Kafka), and any change to a stateful query's operations.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from airflow_async_stream.decision.change import changes_between
from airflow_async_stream.decision.in_place import spec_part
from airflow_async_stream.decision.needs import Decision, How, Need, decide
from airflow_async_stream.insight.read import change_advice
from airflow_async_stream.rollout.desired import DesiredJob, load_folder, tuned_target
from airflow_async_stream.rollout.failures import failed_before, failure_words, spec_digest
from airflow_async_stream.rollout.item import ACTIONS, CHANGES, REAL_TIME_FOLLOW_UP, PlanItem
from airflow_async_stream.rollout.observed import ObservedJob, observe, observe_retired
from airflow_async_stream.rollout.on_purpose import on_purpose
from airflow_async_stream.state.control import control_url_for
from airflow_async_stream.state.fleet import RETIRED

__all__ = [
    "ACTIONS",
    "CHANGES",
    "PlanItem",
    "changes_between",
    "plan",
    "plan_folder",
    "plan_job",
    "spec_digest",
]


def _async_on(spec: dict[str, Any] | None) -> bool:
    return bool(spec_part(spec or {}, "async_progress", "enabled"))


def _safe_disable(
    name: str,
    desired: DesiredJob,
    observed: ObservedJob,
    target: dict[str, Any],
    decision: Decision,
    item: dict[str, Any],
) -> PlanItem | None:
    """The safe-disable item for a job the decision sends through the migration; None for any other job."""
    if decision.need is not Need.SAFE_DISABLE:
        return None
    diff = decision.diff
    if not observed.live:
        return PlanItem(
            name,
            "safe_disable",
            f"runs nothing (state {observed.state}) and its checkpoint cannot restart "
            "synchronously (Spark would die with 'batch N doesn't exist'): through the safe-disable migration, "
            "by restarts",
            diff,
            **item,
            how=decision.how,
            how_reason=decision.how_reason,
        )
    reason = "async progress tracking is turned off"
    if desired.async_forced_off:
        reason += " because the file asks for what async cannot run with (" + "; ".join(desired.async_forced_off) + ")"
    follow_up = None
    if spec_part(target, "trigger", "real_time"):
        # The cure runs micro-batches (async at interval 0, then synchronous); real time comes after it.
        target = {**target, "trigger": spec_part(observed.spec or {}, "trigger") or {}}
        decision = decide(observed.observation, target)
        diff, item = decision.diff, {**item, "desired_spec": target}
        follow_up = REAL_TIME_FOLLOW_UP
        reason += ", in micro-batches first"
    return PlanItem(
        name,
        "safe_disable",
        f"{reason}: through the safe-disable migration, {_words(decision.how)}"
        + (f"; {follow_up}" if follow_up else ""),
        diff,
        **item,
        how=decision.how,
        how_reason=decision.how_reason,
        follow_up=follow_up,
    )


def _gone(name: str, observed: ObservedJob) -> PlanItem:
    """A job gone from the folder: retired when it runs, else listed once more."""
    where: dict[str, Any] = {"control_url": observed.control_url}
    if observed.live:
        return PlanItem(name, "retire", "gone from the folder: a graceful stop; its checkpoint is kept", **where)
    entry = observed.entry
    if entry is not None and entry.state == RETIRED:
        why = f"retired by rollout run {entry.run_id}"
    else:
        why = f"gone from the folder and not running (state {observed.state})"
    return PlanItem(name, "unchanged", f"{why}: listed once more, then left out of plans", leaves_plan=True, **where)


def plan_job(name: str, desired: DesiredJob | None, observed: ObservedJob | None) -> PlanItem:
    """Classify one job (see the module docstring)."""
    if desired is None:
        assert observed is not None
        return _gone(name, observed)
    target = tuned_target(desired.spec.to_mapping(), observed.spec if observed else None)
    # The control area the job has now (before a refused checkpoint move, the old one), else the new one's.
    control_url = observed.control_url if observed and observed.spec else control_url_for(desired.spec.checkpoint)
    item: dict[str, Any] = {"checkpoint": desired.spec.checkpoint, "control_url": control_url, "desired_spec": target}
    if observed is None or observed.spec is None:
        if desired.spec.suspended:
            return PlanItem(name, "unchanged", "never deployed, and its file says state: suspended", **item)
        return PlanItem(name, "deploy", "a new job: never deployed", changes_between({}, target), **item)
    decision = decide(observed.observation, target)
    diff = decision.diff
    if decision.need is Need.REFUSED:
        return PlanItem(name, "refuse", f"{decision.why}; the job is left as it runs", diff, **item)
    stopped = on_purpose(name, desired, observed, item, diff)
    if stopped is not None:
        return stopped
    cure = _safe_disable(name, desired, observed, target, decision, item)
    if cure is not None:
        return cure
    if diff:
        fields = ", ".join(sorted({key.split(".")[0] if key.startswith("spark_conf") else key for key in diff}))
        turned_on = " (async progress tracking turned on)" if _async_on(target) and not _async_on(observed.spec) else ""
        return PlanItem(
            name,
            "update",
            f"changed: {fields}{turned_on}; {_words(decision.how)}",
            diff,
            **item,
            how=decision.how,
            how_reason=decision.how_reason,
        )
    if not observed.live:
        resumed = "resumed: " if observed.stopped else ""  # its file's suspend, ended by the file
        return PlanItem(
            name,
            "update",
            f"{resumed}runs nothing (state {observed.state}): redeploy the desired spec",
            **item,
            how=decision.how,
            how_reason=decision.how_reason,
        )
    if not observed.confirmed:
        return PlanItem(
            name,
            "unchanged",
            "runs the desired spec, not yet confirmed stable: its committed batches are checked",
            needs_confirmation=True,
            **item,
        )
    return PlanItem(name, "unchanged", "runs the desired spec", **item)


def remember_failure(item: PlanItem, observed: ObservedJob | None, retry_failed: bool) -> PlanItem:
    """Mark an item whose spec already failed on its job: held back (not tried again until the spec changes)
    unless ``retry_failed``; either way its reason says when and why it failed."""
    rollout = observed.rollout if observed else None
    failed = failed_before(item.desired_spec, rollout) if item.action in CHANGES else None
    if failed is None:
        return item
    if retry_failed:
        return replace(
            item, reason=f"{item.reason}; retried as asked: it {failure_words(failed)}", failed_before=failed
        )
    reason = (
        f"{item.reason} — {failure_words(failed)}; not retried until the spec changes (retry_failed=True, or a run "
        'with conf {"retry_failed": true}, tries it again)'
    )
    return replace(item, reason=reason, failed_before=failed, held_back=True)


def with_advice(item: PlanItem) -> PlanItem:
    """``item`` with its job's advice when it updates the job with async turned on or a new interval."""
    if item.action != "update" or not item.control_url:
        return item
    return replace(item, advice=change_advice(item.control_url, item.checkpoint or "", item.diff))


def _words(how: str) -> str:
    return "switched in place" if how == How.IN_PLACE else "a graceful stop and redeploy"


def plan(
    desired: dict[str, DesiredJob], observed: dict[str, ObservedJob], retry_failed: bool = False
) -> list[PlanItem]:
    """One item per job, desired or deployed, in name order; a change that already failed is held back
    unless ``retry_failed``."""
    return [
        remember_failure(plan_job(name, desired.get(name), observed.get(name)), observed.get(name), retry_failed)
        for name in sorted(set(desired) | set(observed))
    ]


def plan_folder(
    folder: str | Path,
    *,
    adopt: bool = False,
    run_id: str | None = None,
    retry_failed: bool = False,
    analyze: bool = False,
) -> list[PlanItem]:
    """Read the folder, its fleet index and every job's control area, and plan (DesiredStateError listing
    every problem of the folder when it is invalid).

    With ``adopt`` (the rollout's plan step), every deployed job of the folder not yet in the index is written
    into it, so from then on every worker finds it. With ``analyze``, every change has its query built on a local Spark first
    (rollout/analysis.py): its verdict is the item's ``analysis``.
    """
    desired, index = load_folder(folder)
    indexed = set(index.names())
    observed = observe({name: job.spec.checkpoint for name, job in desired.items()}, index)
    observed.update(observe_retired(index, indexed, desired))
    if adopt:
        for name, job in observed.items():
            if name not in indexed and job.spec is not None:
                index.record_active(name, job.control_url, run_id)
    items = [with_advice(item) for item in plan(desired, observed, retry_failed)]
    if not analyze:
        return items
    from airflow_async_stream.rollout.analysis import with_analysis  # only a plan that analyzes needs it

    return with_analysis(items, desired, folder)
