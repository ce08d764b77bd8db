"""Stateful-operator detection from analyzed plans that real Spark 4.2.0 printed (see the fixture)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_async_stream.runtime.plan import (
    analyzed_plan_section,
    parse_tree,
    real_time_refused_in,
    stateful_operators_in,
)

PLANS = json.loads((Path(__file__).parents[1] / "fixtures" / "spark_4_2_explain_extended.json").read_text())


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("plain", []),
        ("sqlfilter", []),
        ("stream_static", []),
        ("static_stream", []),
        ("agg", ["Aggregate"]),
        ("sqlagg", ["Aggregate"]),
        ("window", ["Aggregate"]),
        ("dedup", ["Deduplicate"]),
        ("distinct", ["Deduplicate"]),
        ("limit", ["GlobalLimit"]),
        ("stream_stream", ["Join (stream-stream)"]),
    ],
)
def test_stateful_operators_from_real_plans(case: str, expected: list[str]) -> None:
    assert stateful_operators_in(parse_tree(analyzed_plan_section(PLANS[case]))) == expected


def test_tree_structure_follows_child_markers() -> None:
    root = parse_tree(
        "~Join Inner\n:- ~Project [a]\n:  +- ~StreamingRelationV2 rate\n+- Project [b]\n   +- Range (0, 10)\n"
    )
    assert root is not None and root.name == "Join" and root.streaming
    assert [(c.name, c.streaming) for c in root.children] == [("Project", True), ("Project", False)]
    assert stateful_operators_in(root) == []


def test_a_batch_aggregate_under_a_stream_static_join_is_not_stateful() -> None:
    root = parse_tree("~Join Inner\n:- ~StreamingRelationV2 rate\n+- Aggregate [k]\n   +- Range (0, 10)\n")
    assert stateful_operators_in(root) == []


def test_explain_output_without_an_analyzed_plan_is_an_error() -> None:
    with pytest.raises(ValueError, match="no analyzed logical plan"):
        analyzed_plan_section("== Physical Plan ==\nfoo")


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        ("plain", []),
        ("sqlfilter", []),
        ("stream_static", []),  # a join: which join Spark plans is its planner's choice (a broadcast passes)
        ("agg", ["Aggregate"]),
        ("window", ["Aggregate"]),
        ("distinct", ["Deduplicate"]),
        ("limit", ["GlobalLimit", "LocalLimit"]),
    ],
)
def test_operators_real_time_mode_refuses_from_real_plans(case: str, expected: list[str]) -> None:
    assert real_time_refused_in(parse_tree(analyzed_plan_section(PLANS[case]))) == expected


def test_a_sort_or_shuffle_on_the_stream_is_refused_in_real_time_but_not_on_a_static_side() -> None:
    root = parse_tree(
        "~Sort [a ASC]\n+- ~Join Inner\n   :- ~RepartitionByExpression [a]\n   :  +- ~StreamingRelationV2 rate\n"
        "   +- Window [b]\n      +- Range (0, 10)\n"
    )
    assert real_time_refused_in(root) == ["RepartitionByExpression", "Sort"]
