"""The plan step's analysis: which items it judges, and how a refusal reads (the analysis itself, on a real
Spark: tests/integration/test_analyze.py and test_rollout.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_async_stream.rollout.analysis import refused_by_analysis, with_analysis
from airflow_async_stream.rollout.desired import DesiredJob
from airflow_async_stream.rollout.item import PlanItem
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop


def test_a_refusal_names_job_file_field_and_reason_and_right_or_unanalyzed_items_none() -> None:
    wrong = {"ok": False, "file": "/srv/desired/a.yaml", "problems": [{"field": "transform.sql", "reason": "bad"}]}
    items = [
        PlanItem("a", "deploy", "new", analysis=wrong),
        PlanItem("b", "deploy", "new", analysis={"ok": True, "file": "/srv/desired/b.yaml", "problems": []}),
        PlanItem("c", "unchanged", "runs the desired spec"),
    ]
    assert refused_by_analysis(items) == ["a (a.yaml): transform.sql: bad"]


def test_a_plan_without_changes_to_apply_starts_no_spark(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))  # a Spark start would fail loudly
    desired = {n: DesiredJob(parse_spec(rate_noop(n, f"/ck/{n}")), f"{n}.yaml") for n in ("kept", "held")}
    items = [
        PlanItem("kept", "unchanged", "runs the desired spec"),
        PlanItem("held", "update", "failed before", held_back=True),
        PlanItem("gone", "retire", "left the folder"),
    ]
    assert with_analysis(items, desired, tmp_path) == items
