"""``deploy_job``'s refusal of a synchronous deploy onto a checkpoint Spark cannot restart synchronously: before
anything is stopped or submitted, naming the cure; an explicit override is logged and deploys."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.exceptions import DeployError, UnsafeSyncRestartError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from tests.helpers import make_checkpoint, rate_noop, snapshot

HOLDER = Holder("process 1 on test-host", "a unit test")


class LaunchedError(Exception):
    """The deploy reached spark-submit."""


class _NoSubmit(LocalLauncher):
    """This host's launcher, stopping the deploy where it would start spark-submit."""

    def launch(self, submission: Submission, control: ControlArea) -> dict[str, Any]:
        raise LaunchedError(submission.deployment_id)


def _deploy(checkpoint: str, allow: bool = False, **changes: Any) -> None:
    spec = parse_spec(rate_noop("clicks", checkpoint, **changes))
    deploy_job(spec, HOLDER, DeploySettings(launcher=_NoSubmit(), allow_unsafe_sync_restart=allow))


def test_a_synchronous_deploy_onto_gaps_is_refused_before_submit_naming_the_cure(tmp_path: Path) -> None:
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    before = snapshot(tmp_path / "ck")
    with pytest.raises(UnsafeSyncRestartError) as refused:
        _deploy(checkpoint)
    message = str(refused.value)
    assert message.startswith("clicks: a synchronous deploy is refused: offsets/6 is missing")
    assert "safe-disable migration" in message and f"airflow-async-stream doctor {checkpoint}" in message
    assert "allow_unsafe_sync_restart=True" in message
    assert ControlArea.for_checkpoint(checkpoint).read_deployment() is None  # nothing recorded, nothing submitted
    assert snapshot(tmp_path / "ck") == before


def test_the_override_is_logged_and_deploys(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    with caplog.at_level(logging.WARNING), pytest.raises(LaunchedError):
        _deploy(checkpoint, allow=True)
    assert "deploying synchronously as asked (allow_unsafe_sync_restart), though offsets/6 is missing" in caplog.text


@pytest.mark.parametrize(
    ("offsets", "changes"),
    [
        ([0, 4, 7], {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}),  # async restarts over gaps
        ([0, 1, 2], {}),  # a safe checkpoint
        (None, {}),  # a new job: no checkpoint yet
    ],
    ids=["async-over-gaps", "safe", "new"],
)
def test_what_spark_can_restart_is_deployed(tmp_path: Path, offsets: list[int] | None, changes: Any) -> None:
    checkpoint = make_checkpoint(tmp_path / "ck", offsets, offsets) if offsets else str(tmp_path / "ck")
    with pytest.raises(LaunchedError):
        _deploy(checkpoint, **changes)


def test_a_checkpoint_inside_another_jobs_checkpoint_is_refused_before_submit(tmp_path: Path) -> None:
    outer = make_checkpoint(tmp_path / "other-job", [0, 1], [0, 1])
    Path(outer, "metadata").write_text('{"id":"q"}\n')
    before = snapshot(tmp_path / "other-job")
    with pytest.raises(DeployError) as refused:
        _deploy(f"{outer}/inner")
    assert str(refused.value) == (
        f"checkpoint {outer}/inner is inside {outer}, the Spark checkpoint of another job: give each job a folder "
        "of its own"
    )
    assert snapshot(tmp_path / "other-job") == before  # nothing written into it, not even a control area
    with pytest.raises(LaunchedError):  # a sibling folder is no one's checkpoint
        _deploy(str(tmp_path / "other-job-2"))
