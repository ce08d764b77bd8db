"""DAG factories: the scheduled rollout of a desired-state folder, and the fleet's async toggle-off.

    plan -> apply (one mapped task per job, at most ``max_parallel`` at once) -> summary

One job's failure does not stop the others: each mapped task rolls its own job back and fails alone; the
summary runs whatever happened, prints per job its action, outcome and duration, and fails the run when
any job missed its desired state. Two rollouts never change one job at once: each mapped task holds the
job (``hold.json`` in its control area) for its DAG run, and a DAG runs one run at a time. A re-run after
a crash plans again from what the control areas say, so a job already brought to its desired state is
``unchanged`` (its commits confirmed, not redeployed). Which jobs a rollout deployed is kept in the folder's
fleet index on shared storage (fleet.py), so every worker plans the same fleet.
"""

from __future__ import annotations

import logging
from collections.abc import Collection
from dataclasses import replace
from functools import partial
from typing import Any

from airflow.sdk import DAG, get_current_context, task

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import RolloutError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.lineage.link import LineageLink
from airflow_async_stream.operators.lineage import lineage_link
from airflow_async_stream.rollout.analysis import refused_by_analysis
from airflow_async_stream.rollout.apply import FAILED_OUTCOMES, ApplySettings, apply_item
from airflow_async_stream.rollout.desired import load_folder
from airflow_async_stream.rollout.planner import PlanItem, plan_folder
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, dag_run_lookup

__all__ = ["report", "rollout_dag", "summarize", "toggle_off_dag"]

_log = logging.getLogger(__name__)
#: A job's outcome when its change is the spec that already failed (the plan held it back).
NOT_RETRIED = "not retried"


def summarize(items: list[dict[str, Any]], run_id: str | None) -> list[dict[str, Any]]:
    """Each planned job's outcome in this run, from its control area's rollout record."""
    rows = []
    for item in items:
        if item.get("held_back"):
            rows.append({**{k: item.get(k) for k in ("job", "action", "reason")}, "outcome": NOT_RETRIED})
            continue
        record = ControlArea(item["control_url"]).read_json(ControlArea.ROLLOUT) if item.get("control_url") else None
        if record and record.get("run_id") == run_id:
            rows.append({k: record.get(k) for k in ("job", "action", "outcome", "duration_s", "error", "reason")})
        else:
            rows.append({**{k: item.get(k) for k in ("job", "action", "reason")}, "outcome": "not applied"})
    return rows


def report(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Log one line per job; fail naming every job short of its desired state."""
    _log.info("%-24s %-13s %-12s %9s  %s", "job", "action", "outcome", "duration", "detail")
    for row in rows:
        duration = f"{row['duration_s']:.1f} s" if row.get("duration_s") is not None else "-"
        detail = row.get("error") or row.get("reason") or ""
        _log.info("%-24s %-13s %-12s %9s  %s", row["job"], row["action"], row["outcome"], duration, detail)
    missed = [r for r in rows if r["outcome"] in FAILED_OUTCOMES | {"refused", "not applied", NOT_RETRIED}]
    if missed:
        raise RolloutError(
            "jobs short of their desired state: "
            + "; ".join(f"{r['job']} ({r['action']}: {r['outcome']})" for r in missed)
        )
    return rows


def _plan_step(
    folder: str, context: Any, retry_failed: bool, analyze: bool, only: frozenset[str] | None
) -> list[dict[str, Any]]:
    """The plan task: plan the folder (and analyze its changes when asked), log it, and hand the chosen
    items on; a spec the analysis refuses fails it before any job is touched."""
    conf = context["dag_run"].conf or {}
    retry = retry_failed or conf.get("retry_failed") is True
    check = analyze or conf.get("analyze") is True
    items = plan_folder(folder, adopt=True, run_id=context["run_id"], retry_failed=retry, analyze=check)
    for item in items:
        _log.info("%-24s %-13s %s", item.job, item.action, item.reason)
        for advice in item.advice:  # the job's own figures on the change (report's advice)
            _log.info("%-24s %-13s advice: %s", "", "", advice["summary"])
        for note in (item.analysis or {}).get("not_checked", []):
            _log.info("%-24s %-13s not checked: %s", "", "", note)
    chosen = [i for i in items if only is None or i.action in only]
    refused = refused_by_analysis(chosen)
    if refused:  # before any job is touched: no apply step runs
        raise RolloutError(
            f"{len(refused)} problem(s) found by analysis, so no job was changed:\n" + "\n".join(refused)
        )
    _log.info("%d jobs planned, %d to apply", len(items), len(chosen))
    return [item.to_json() for item in chosen]


def rollout_dag(
    folder: str,
    *,
    dag_id: str = "rollout_desired_state",
    schedule: Any = None,
    max_parallel: int = 2,
    actions: Collection[str] | None = None,
    conn_id: str = StreamingJobHook.default_conn_name,
    startup_timeout_s: float = 300.0,
    wait_timeout_s: float = 300.0,
    retry_failed: bool = False,
    analyze: bool = False,
    **dag_kwargs: Any,
) -> DAG:
    """Build the rollout DAG for ``folder`` (``actions``: apply only these, e.g. ``{"safe_disable"}``).

    A change that failed is not tried again while its spec stays the same (the plan says so); a run
    triggered with conf ``{"retry_failed": true}``, or ``retry_failed=True`` here, tries it again.
    With ``analyze=True`` (or a run's conf ``{"analyze": true}``) the plan step builds every change's query on
    a local Spark first (``validate --analyze``), and a spec Spark would refuse fails the plan before any job
    is touched; the plan's items carry each verdict.
    """
    deploy = DeploySettings(conn_id, startup_timeout_s=startup_timeout_s, requested_by=f"rollout {dag_id}")
    settings = ApplySettings(folder, replace(deploy, launcher=partial(launcher_for, conn_id)), wait_timeout_s)
    only = frozenset(actions) if actions is not None else None
    load_folder(folder)  # at DAG parse: every problem of the folder (specs, names, fleet file) in one import error
    dag_kwargs.setdefault("catchup", False)
    dag_kwargs.setdefault("max_active_runs", 1)
    dag_kwargs.setdefault("tags", ["airflow-async-stream", "rollout"])

    with DAG(dag_id=dag_id, schedule=schedule, **dag_kwargs) as dag:

        @task(task_id="plan")
        def plan_changes() -> list[dict[str, Any]]:
            return _plan_step(folder, get_current_context(), retry_failed, analyze, only)

        @task(task_id="apply", max_active_tis_per_dagrun=max_parallel, map_index_template="{{ job_name }}")
        def apply_change(item: dict[str, Any]) -> dict[str, Any]:
            context = get_current_context()
            context["job_name"] = f"{item['job']}: {item['action']}"  # type: ignore[typeddict-unknown-key]
            holder = Holder.for_task(context, f"rollout {item['job']}")
            ti = context["ti"]
            airflow_ids = {"dag_id": ti.dag_id, "run_id": ti.run_id, "task_id": ti.task_id, "try_number": ti.try_number}
            plan_item = PlanItem.from_json(item)
            desired = parse_spec(plan_item.desired_spec) if plan_item.desired_spec else None
            link = lineage_link(context, desired) if desired else LineageLink()
            step_settings = replace(settings, deploy=replace(settings.deploy, airflow=airflow_ids, lineage=link))
            return apply_item(plan_item, holder, step_settings, dag_run_lookup(context), _log)

        @task(task_id="summary", trigger_rule="all_done")
        def summary(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return report(summarize(items, get_current_context()["run_id"]))

        planned = plan_changes()
        apply_change.expand(item=planned) >> summary(planned)  # type: ignore[arg-type]  # Airflow resolves the XComArg
    return dag


def toggle_off_dag(
    folder: str, *, dag_id: str = "toggle_off_async_progress", max_parallel: int = 2, **kwargs: Any
) -> DAG:
    """Migrate every job whose desired spec turns async off (or asks for a trigger or sink async cannot run
    with) through the safe-disable path, ``max_parallel`` at a time; nothing else is changed."""
    return rollout_dag(folder, dag_id=dag_id, max_parallel=max_parallel, actions={"safe_disable"}, **kwargs)
