"""Which async progress fields the tuner sets (``auto``), its bounds, and exactly-once delivery."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from airflow_async_stream.decision.in_place import configuration_of
from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import Observation
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.schema import spec_json_schema
from airflow_async_stream.spec.tracking import carry_tuned
from tests.helpers import rate_noop

SCHEMA = jsonschema.Draft202012Validator(spec_json_schema())


def problems(data: dict[str, Any]) -> list[tuple[str, str]]:
    with pytest.raises(SpecError) as caught:
        parse_spec(data)
    return caught.value.problems


def test_auto_holds_the_value_in_effect_and_names_the_delegated_field() -> None:
    spec = parse_spec(rate_noop(async_progress={"enabled": "auto"}))
    assert spec.async_progress.enabled is False  # synchronous until the tuner says otherwise
    assert spec.async_progress.checkpoint_interval_ms == 1000
    assert spec.async_progress.auto == ["enabled"]
    assert spec.async_progress.delegated("enabled") and not spec.async_progress.delegated("checkpoint_interval_ms")
    assert spec.writer_options().get("asyncProgressTrackingEnabled") is None


def test_a_tuned_spec_reads_back_as_written() -> None:
    both = parse_spec(rate_noop(async_progress={"checkpoint_interval_ms": "auto", "enabled": "auto"}))
    assert both.async_progress.auto == ["enabled", "checkpoint_interval_ms"]  # one order, however written
    tuned = parse_spec(
        both.to_mapping()
        | {
            "async_progress": {
                "enabled": True,
                "checkpoint_interval_ms": 300,
                "auto": ["checkpoint_interval_ms", "enabled"],
            }
        }
    )
    assert parse_spec(tuned.to_mapping()) == tuned
    assert tuned.writer_options()["asyncProgressTrackingCheckpointIntervalMs"] == "300"
    assert tuned.to_mapping()["async_progress"]["auto"] == ["enabled", "checkpoint_interval_ms"]


def test_no_field_delegated_leaves_no_trace_in_the_spec() -> None:
    assert "auto" not in parse_spec(rate_noop(async_progress={"auto": []})).to_mapping()["async_progress"]


def test_what_the_query_records_leaves_the_delegation_out() -> None:
    auto = parse_spec(rate_noop(async_progress={"enabled": "auto"}))
    pinned = parse_spec(rate_noop(async_progress={"enabled": False}))
    assert configuration_of(auto) == configuration_of(pinned)  # one configuration in the report


@pytest.mark.parametrize(
    ("given", "field"),
    [
        ({"async_progress": {"enabled": "yes"}}, "async_progress.enabled"),
        ({"async_progress": {"auto": ["trigger"]}}, "async_progress.auto.0"),
        ({"autotune": {"min_saving": 0}}, "autotune.min_saving"),
        ({"autotune": {"min_saving": 1.5}}, "autotune.min_saving"),
        ({"autotune": {"measure_batches": 2}}, "autotune.measure_batches"),
        ({"autotune": {"at_most_every": "often"}}, "autotune.at_most_every"),
        ({"autotune": {"max_rerun_seconds": 0}}, "autotune.max_rerun_seconds"),
        ({"autotune": {"measure_batchs": 20}}, "autotune.measure_batchs"),
        ({"delivery": "exactly_twice"}, "delivery"),
    ],
)
def test_bad_tuning_input_names_its_field(given: dict[str, Any], field: str) -> None:
    assert field in [name for name, _ in problems(rate_noop(**given))]


def test_exactly_once_refuses_async_pinned_on_and_allows_auto() -> None:
    found = problems(rate_noop(delivery="exactly_once", async_progress={"enabled": True}))
    assert [name for name, _ in found] == ["delivery"]
    assert "re-runs" in found[0][1]
    parse_spec(rate_noop(delivery="exactly_once", async_progress={"enabled": "auto"}))  # the tuner never turns it on


def test_the_bounds_have_documented_defaults() -> None:
    settings = parse_spec(rate_noop()).autotune_settings
    assert (settings.max_rerun_seconds, settings.min_saving, settings.measure_batches) == (10, 0.15, 20)
    assert settings.at_most_every_s() == 3600.0


@pytest.mark.parametrize(
    ("data", "valid"),
    [
        (rate_noop(async_progress={"enabled": "auto", "checkpoint_interval_ms": "auto"}), True),
        (rate_noop(async_progress={"enabled": "maybe"}), False),
        (rate_noop(delivery="exactly_once", async_progress={"enabled": True}), False),
        (rate_noop(delivery="exactly_once", async_progress={"enabled": "auto"}), True),
        (rate_noop(autotune={"measure_batches": 30, "at_most_every": "2 hours"}), True),
    ],
)
def test_the_schema_judges_tuning_as_the_loader_does(data: dict[str, Any], valid: bool) -> None:
    assert SCHEMA.is_valid(data) is valid
    try:
        parse_spec(data)
    except SpecError:
        assert not valid
    else:
        assert valid


def test_a_rollout_carries_the_tuned_value_of_a_delegated_field_only() -> None:
    running = parse_spec(
        rate_noop(
            async_progress={
                "enabled": True,
                "checkpoint_interval_ms": 300,
                "auto": ["enabled", "checkpoint_interval_ms"],
            }
        )
    ).to_mapping()
    delegated = parse_spec(rate_noop(async_progress={"enabled": "auto", "checkpoint_interval_ms": "auto"}))
    assert carry_tuned(delegated.to_mapping(), running) == running
    half = parse_spec(rate_noop(async_progress={"enabled": "auto", "checkpoint_interval_ms": 2000})).to_mapping()
    carried = carry_tuned(half, running)["async_progress"]
    assert (carried["enabled"], carried["checkpoint_interval_ms"]) == (True, 2000)  # the pinned interval wins
    assert carry_tuned(half, None) == half  # never deployed: the file's starting values


def test_delegating_or_bounding_is_no_change_the_query_feels_beyond_a_switch() -> None:
    before = parse_spec(rate_noop(async_progress={"enabled": True})).to_mapping()
    after = parse_spec(
        rate_noop(
            async_progress={"enabled": True, "auto": ["enabled"]},
            autotune={"min_saving": 0.3},
            delivery="at_least_once",
        )
    ).to_mapping()
    assert decide(Observation("/ck", before, None, None, live=True, switchable=True), after).need is Need.SWITCH
