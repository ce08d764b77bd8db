"""The control area's typed records: what the previous release wrote reads back, and nothing is lost."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import hold_state
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import Deployment, Hold, State, Status, hold_ttl_s

WRITTEN_BY_0_1_0 = Path(__file__).parents[1] / "fixtures" / "records_0_1_0"


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    area = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    area.ensure()
    for name in ("status.json", "deployment.json", "hold.json"):
        shutil.copy(WRITTEN_BY_0_1_0 / name, area.path(name))
    return area


def test_records_the_previous_release_wrote_read_as_typed_records(control: ControlArea) -> None:
    status, deployment, hold = control.read_status(), control.read_deployment(), control.read_hold()
    assert status is not None and deployment is not None and hold is not None
    assert (status.state, status.batches, status.last_batch_id) == (State.STOPPED, 10, 36)
    assert status.state is State.STOPPED and Status(state="running").state is State.RUNNING  # typed, not text
    assert status.deployment_id == deployment.deployment_id == "20261123T173651Z-622bd7de"
    assert (deployment.start_batch, deployment.first_batch_id) == (26, 27)
    assert deployment.async_progress == {"checkpoint_interval_ms": 3000, "enabled": False}
    assert deployment.driver and deployment.driver.launcher_pid == 4868
    assert (hold.holder, hold.dag_id, hold.run_id) == (
        "DAG run example_safe_disable/manual__1",
        "example_safe_disable",
        "manual__1",
    )
    assert liveness(status).reason == "state is stopped"
    assert hold_state(hold.but(expires_at=time.time() + 60)) is None
    assert hold_state(hold.but(expires_at=time.time() - 1)) == "expired"


@pytest.mark.parametrize("name", ["status.json", "deployment.json", "hold.json"])
def test_a_record_written_back_keeps_every_key_it_was_read_with(control: ControlArea, name: str) -> None:
    before = json.loads(Path(control.path(name)).read_text())
    kind = {"status.json": Status, "deployment.json": Deployment, "hold.json": Hold}[name]
    newer = {**before, "from_a_newer_release": {"kept": True}}
    if "driver" in before:  # a record within the record keeps its own
        newer["driver"] = {**before["driver"], "from_a_newer_release": 1}
    record = kind.from_json(newer)
    control.write_json(name, record.to_json())
    after = control.read_json(name)
    assert after is not None
    assert _kept(newer, after)
    assert after["from_a_newer_release"] == {"kept": True}


def _kept(before: Any, after: Any) -> bool:
    """Every key of ``before`` is in ``after`` with its value (within an object: every key of its own)."""
    if isinstance(before, dict) and isinstance(after, dict):
        return all(k in after and _kept(v, after[k]) for k, v in before.items())
    return bool(before == after)


def test_a_record_with_a_missing_or_wrong_shape_is_an_error_naming_the_file(control: ControlArea) -> None:
    control.write_json("status.json", {"deployment_id": "d1"})
    with pytest.raises(ControlAreaError, match=r"status.json names no state"):
        control.read_status()
    control.write_json("status.json", {"deployment_id": "d1", "state": 5})
    with pytest.raises(ControlAreaError, match=r"state should be one of starting, running, .* or null, found int 5"):
        control.read_status()
    control.write_json("status.json", {"deployment_id": "d1", "state": "runing"})
    with pytest.raises(ControlAreaError, match=r"state 'runing' is none of starting, running"):
        control.read_status()
    Path(control.path("hold.json")).write_text("[1, 2]")
    with pytest.raises(ControlAreaError, match=r"hold.json should hold a JSON object"):
        control.read_hold()


def test_a_hold_lasts_the_sum_of_its_steps_time_limits() -> None:
    assert hold_ttl_s() == 60.0  # the margin alone
    one_deploy = hold_ttl_s(deploys=1, startup_timeout_s=300, stop_kill_after_s=120)
    assert one_deploy == 300 + 120 + 60
    migration = hold_ttl_s(
        deploys=3, stops=1, waits=2, startup_timeout_s=300, stop_kill_after_s=120, wait_timeout_s=600
    )
    assert migration == 3 * 420 + 120 + 2 * 600 + 60


def test_an_earlier_release_control_area_has_a_health_and_no_incidents(control: ControlArea) -> None:
    from airflow_async_stream.cli.show import status_report

    report = status_report(control)
    assert report["incidents"] == [] and not control.fs.exists(control.path(ControlArea.INCIDENTS))
    assert report["health"]["verdict"] == "stopped"
