"""What a change needs is decided in one place (decision/needs.py), and the CLI's ``switch`` and the rollout
planner give the same answer for every case, including those they used to answer differently."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.cli.change import assign, parse_assignment
from airflow_async_stream.decision.needs import How, Need, decide
from airflow_async_stream.decision.observe import Observation
from airflow_async_stream.rollout.desired import DesiredJob
from airflow_async_stream.rollout.observed import ObservedJob
from airflow_async_stream.rollout.planner import plan_job
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.records import Deployment, State, Status
from tests.helpers import deployed, rate_noop
from tests.unit.cli_run import cli
from tests.unit.helpers import fake_deployment

ASYNC_ON = {"async_progress": {"enabled": True, "checkpoint_interval_ms": 1000}}
ASYNC_OFF = {"async_progress": {"enabled": False, "checkpoint_interval_ms": 1000}}

#: (what the job runs, the ``--set`` a person gives, what that change needs).
CASES = [
    # The planner planned a switch (a pause) for this; the CLI said nothing changes.
    (ASYNC_OFF, "async_progress.checkpoint_interval_ms=0", Need.NOTHING),
    (ASYNC_ON, "async_progress.checkpoint_interval_ms=0", Need.SWITCH),
    (ASYNC_ON, "trigger.processing_time='5 seconds'", Need.SWITCH),
    (ASYNC_ON, "spark_conf.spark.sql.shuffle.partitions=3", Need.SWITCH),
    (ASYNC_ON, "health.on_stall=restart", Need.SWITCH),
    (ASYNC_ON, "async_progress.enabled=false", Need.SAFE_DISABLE),
    (ASYNC_ON, "spark_conf.spark.executor.memory=4g", Need.NEW_DRIVER),
    (ASYNC_OFF, "sink.format=console", Need.NEW_DRIVER),
    # The CLI called this a redeploy; the planner (rightly) refuses it: Spark would not restart the query.
    (ASYNC_ON, "source={format: rate-micro-batch, options: {rowsPerBatch: 5}}", Need.REFUSED),
    (ASYNC_OFF, "stateful=true", Need.REFUSED),
]


def _specs(tmp_path: Path, runs: dict[str, Any], setting: str) -> tuple[dict[str, Any], dict[str, Any]]:
    current = parse_spec(deep_merge(rate_noop("job", str(tmp_path / "ck"), rows=10), runs)).to_mapping()
    return current, parse_spec(assign(current, *parse_assignment(setting))).to_mapping()


def running(spec: dict[str, Any]) -> Observation:
    """A job whose driver runs ``spec`` and can switch in place."""
    return Observation(
        "/ck/job.async-stream",
        spec,
        Status(deployment_id="d1", state=State.RUNNING),
        Deployment(deployment_id="d1"),
        live=True,
        switchable=True,
    )


def change_of(current: dict[str, Any], new: dict[str, Any], gated: bool = False) -> Any:
    return decide(running(current), new, gated=gated)


def _planner_says(current: dict[str, Any], new: dict[str, Any]) -> Need:
    observed = ObservedJob(name="job", observation=running(current), stable={"deployment_id": "d1", "spec": current})
    item = plan_job("job", DesiredJob(parse_spec(new), "job.yaml"), observed)
    return {
        ("unchanged", None): Need.NOTHING,
        ("update", How.IN_PLACE): Need.SWITCH,
        ("update", How.RESTART): Need.NEW_DRIVER,
        ("safe_disable", How.IN_PLACE): Need.SAFE_DISABLE,
        ("refuse", None): Need.REFUSED,
    }[(item.action, item.how)]


def _cli_says(tmp_path: Path, current: dict[str, Any], setting: str) -> Need:
    control = fake_deployment(tmp_path)  # an application's running driver: asking it is refused
    deployed(control, current)
    result = cli("switch", str(tmp_path / "ck"), "--set", setting)
    answers = {
        "nothing to switch": Need.NOTHING,
        "does not switch in place (an application's": Need.SWITCH,  # it passed the checks: it was asked
        "needs a new driver": Need.NEW_DRIVER,
        "not in place without the gate": Need.SAFE_DISABLE,
        "refused: Spark cannot restart the changed query": Need.REFUSED,
    }
    [said] = [need for words, need in answers.items() if words in result.stdout + result.stderr]
    assert result.returncode == (0 if said is Need.NOTHING else 1), result
    return said


@pytest.mark.parametrize(("runs", "setting", "need"), CASES, ids=[case[1] for case in CASES])
def test_the_cli_and_the_planner_agree_on_what_a_change_needs(
    tmp_path: Path, runs: dict[str, Any], setting: str, need: Need
) -> None:
    current, new = _specs(tmp_path, runs, setting)
    assert change_of(current, new).need is need
    assert _planner_says(current, new) is need
    assert _cli_says(tmp_path, current, setting) is need


def test_a_change_says_what_the_query_feels_and_why_it_cannot_switch(tmp_path: Path) -> None:
    current, new = _specs(tmp_path, ASYNC_OFF, "async_progress.checkpoint_interval_ms=0")
    assert change_of(current, new).diff == {}  # the interval of async that stays off is not felt
    assert change_of(current, {**current, "state": "suspended"}).need is Need.NOTHING  # the rollout suspends it
    current, new = _specs(tmp_path, ASYNC_ON, "async_progress.enabled=false")
    assert change_of(current, new).diff == {"async_progress.enabled": {"from": True, "to": False}}
    assert change_of(current, new, gated=True).need is Need.SWITCH  # the migration's gated step
    current, new = _specs(tmp_path, ASYNC_ON, "spark_conf.spark.executor.memory=4g")
    assert change_of(current, new).why == "spark_conf.spark.executor.memory: set when the driver's JVM starts: redeploy"
    current, new = _specs(tmp_path, ASYNC_ON, "source={format: rate-micro-batch, options: {rowsPerBatch: 5}}")
    assert change_of(current, new).why.startswith("the source changed (rate -> rate-micro-batch)")
