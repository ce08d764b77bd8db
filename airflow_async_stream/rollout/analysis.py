"""The plan step's analysis (``analyze=True``): every job the plan changes has its query built on a local Spark
(driver/analyze.py) before any job is touched, so a spec Spark would refuse fails the plan, not a job's restart."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from airflow_async_stream.driver.analyze import analyze_specs
from airflow_async_stream.rollout.desired import DesiredJob
from airflow_async_stream.rollout.item import CHANGES, PlanItem

__all__ = ["refused_by_analysis", "with_analysis"]


def with_analysis(items: list[PlanItem], desired: dict[str, DesiredJob], folder: str | Path) -> list[PlanItem]:
    """``items`` with ``analysis`` set on each change about to be applied (one Spark for all of them); a job
    that stays as it is, is held back or leaves the folder is not analyzed (``analysis`` stays None)."""
    chosen = [i for i in items if i.action in CHANGES and not i.held_back and i.job in desired]
    if not chosen:
        return items
    files = {i.job: str(Path(folder) / desired[i.job].file) for i in chosen}
    run = analyze_specs([(files[i.job], desired[i.job].spec) for i in chosen])
    by_job = {a.job: a.to_json() for a in run.analyses}
    return [replace(i, analysis=by_job[i.job]) if i.job in by_job else i for i in items]


def refused_by_analysis(items: list[PlanItem]) -> list[str]:
    """One line per problem the analysis found, ``job (file): field: reason``; empty when every spec is right."""
    return [
        f"{i.job} ({Path(i.analysis['file']).name}): {p['field']}: {p['reason']}"
        for i in items
        if i.analysis and not i.analysis["ok"]
        for p in i.analysis["problems"]
    ]
