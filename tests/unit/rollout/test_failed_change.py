"""A rollout's change that never took leaves the job alone: no rollback, no restart, and a record the next
plan holds the spec back by. The old driver is a real process (tests/fake_driver.py), no Spark."""

from __future__ import annotations

import json
import re
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.decision.needs import How
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import RolloutError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.rollout.apply import ApplySettings, apply_item
from airflow_async_stream.rollout.planner import PlanItem, spec_digest
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import read_incidents
from airflow_async_stream.state.liveness import liveness
from tests.fake_driver import started
from tests.helpers import rate_noop

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture
def old_driver(tmp_path: Path) -> Iterator[tuple[ControlArea, dict, subprocess.Popen[bytes]]]:
    """A job that runs: its spec, stable spec and a live driver obeying stop requests."""
    spec = parse_spec(
        {"name": "job", "checkpoint": str(tmp_path / "ck"), "source": {"format": "rate"}, "sink": {"format": "noop"}}
    ).to_mapping()
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    deployment_id = f"old-{uuid.uuid4().hex[:6]}"
    control.write_json(ControlArea.STABLE, {"deployment_id": deployment_id, "spec": spec})
    processes: list[subprocess.Popen[bytes]] = []
    process = started(control, deployment_id, "--obey", "--record-deployment", processes=processes)
    yield control, spec, process
    process.kill()
    process.wait()


def test_a_deploy_refused_before_the_old_driver_stopped_leaves_the_job_running_as_it_was(
    old_driver: tuple[ControlArea, dict, subprocess.Popen[bytes]], tmp_path: Path
) -> None:
    control, spec, process = old_driver
    before = control.read_json(ControlArea.STATUS)
    # A change that needs a new driver, naming a connection that does not exist: the deploy fails at the
    # connection lookup, before it stops anything.
    wanted = parse_spec(deep_merge(spec, {"source": {"secret_options": {"token": "no_such_conn_x"}}})).to_mapping()
    item = PlanItem(
        "job",
        "update",
        "changed: source.secret_options",
        control_url=control.url,
        checkpoint=spec["checkpoint"],
        desired_spec=wanted,
        how=How.RESTART,
    )
    (tmp_path / "desired").mkdir()
    (tmp_path / "desired" / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    settings = ApplySettings(
        folder=str(tmp_path / "desired"),
        deploy=DeploySettings(launcher=launcher_for("spark_default"), startup_timeout_s=10),
    )

    with pytest.raises(RolloutError, match="update failed: the new spec was not deployed") as caught:
        apply_item(item, Holder.this_process("rollout test"), settings)

    assert "no_such_conn_x" in str(caught.value) and f"{before['deployment_id']} runs as before" in str(caught.value)
    status = control.read_json(ControlArea.STATUS)
    assert process.poll() is None and liveness(status).live
    assert (status["deployment_id"], status["state"]) == (before["deployment_id"], "running")
    assert json.loads(control.read_bytes(ControlArea.SPEC)) == spec  # nothing redeployed, not even the old spec
    record = control.read_json(ControlArea.ROLLOUT)
    assert (record["outcome"], record["not_taken"], record["failed_spec"]) == ("failed", True, spec_digest(wanted))
    [incident] = read_incidents(control)  # the failed change, for the job's history
    assert (incident.kind, incident.deployment_id) == ("change_failed", before["deployment_id"])
    assert "no_such_conn_x" in (incident.error or "") and incident.diagnosis.startswith("rollout update failed")  # type: ignore[union-attr]
    assert incident.action == "none; the spec is held back until it changes"


def test_a_running_driver_rehearses_only_what_it_builds_as_a_new_driver_would() -> None:
    from airflow_async_stream.runtime.switch_request import not_rehearsable

    base = {"name": "job", "checkpoint": "/ck/job", "source": {"format": "rate"}, "sink": {"format": "noop"}}
    current = parse_spec(base)
    sql = parse_spec({**base, "transform": {"sql": "SELECT value FROM source"}})
    assert not_rehearsable(current, sql, has_query=True) is None
    assert "own application" in str(not_rehearsable(current, sql, has_query=False))
    python = parse_spec({**base, "transform": {"entrypoint": "mod:fn"}})
    assert "Python transform" in str(not_rehearsable(current, python, has_query=True))
    moved = parse_spec({**base, "source": {"format": "rate", "options": {"rowsPerSecond": 5}}})
    assert "the source changed" in str(not_rehearsable(current, moved, has_query=True))


def test_a_rollout_item_whose_driver_failed_names_the_doctor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow_async_stream.exceptions import DriverFailedError
    from airflow_async_stream.rollout import apply

    def failed(step: object) -> dict:
        raise DriverFailedError("the driver failed: AnalysisException: nope")

    monkeypatch.setitem(apply.ACTIONS, "update", failed)
    checkpoint = str(tmp_path / "ck")
    control = ControlArea.for_checkpoint(checkpoint)
    item = PlanItem(
        "job",
        "update",
        "changed",
        control_url=control.url,
        checkpoint=checkpoint,
        desired_spec=parse_spec(rate_noop("job", checkpoint)).to_mapping(),
        how=How.RESTART,
    )
    (tmp_path / "desired").mkdir()
    (tmp_path / "desired" / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    with pytest.raises(RolloutError, match=re.escape(f"run `airflow-async-stream doctor {checkpoint}`")):
        apply_item(
            item,
            Holder.this_process("rollout test"),
            ApplySettings(folder=str(tmp_path / "desired"), deploy=DeploySettings()),
        )
