"""The migration's last word: which spec file would turn async progress tracking back on, and what to change."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pendulum
import yaml
from airflow.sdk import DAG

from airflow_async_stream.factories import safe_disable_async_progress
from airflow_async_stream.migrations.spec_follow_up import spec_follow_up
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop

SPEC: dict[str, Any] = rate_noop(
    "clicks", "/tmp/follow-up-ck", async_progress={"enabled": True, "checkpoint_interval_ms": 1000}
)


def _file(path: Path, **changes: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({**SPEC, **changes}))
    return path


def _control(tmp_path: Path) -> ControlArea:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    return control


def test_a_file_still_turning_async_on_is_named_with_the_change(tmp_path: Path) -> None:
    spec_file = _file(tmp_path / "specs" / "clicks.yaml")
    [check] = spec_follow_up("clicks", str(spec_file), _control(tmp_path))
    assert (check.file, check.async_on) == (str(spec_file), True)
    assert check.advice == (
        f"{spec_file} still says async_progress.enabled: true: set it to false (or remove async_progress: off is "
        "Spark's default), or the next deploy from this file turns async progress tracking back on"
    )


def test_a_file_already_off_is_said_to_agree_and_overrides_are_named(tmp_path: Path) -> None:
    spec_file = _file(tmp_path / "clicks.yaml", async_progress={"enabled": False})
    [check] = spec_follow_up("clicks", str(spec_file), _control(tmp_path), {"spark_conf": {"a": "b"}})
    assert check.async_on is False
    assert (
        check.advice
        == f"{spec_file} already says async progress off; also carry the migration's sync_overrides (spark_conf) into it"
    )


def test_a_spec_given_in_the_dag_says_where_to_change_it(tmp_path: Path) -> None:
    [check] = spec_follow_up("clicks", None, _control(tmp_path))
    assert check.file is None and "given in the DAG, not in a file" in check.advice


def test_a_job_a_rollout_deployed_names_its_file_in_the_desired_folder(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    _file(folder / "other.yaml", name="other")
    in_folder = _file(folder / "clicks-stream.yml")  # named by its job, not by its file name
    control = _control(tmp_path)
    control.write_json(ControlArea.ROLLOUT, {"folder": str(folder), "action": "deploy"})
    own = _file(tmp_path / "mine.yaml", async_progress={"enabled": False})
    rollout_check, own_check = spec_follow_up("clicks", str(own), control)
    assert (rollout_check.file, rollout_check.async_on) == (str(in_folder), True)
    assert rollout_check.advice.endswith(f"or the next rollout of {folder} turns async progress tracking back on")
    assert (own_check.file, own_check.async_on) == (str(own), False)

    in_folder.unlink()
    [gone] = spec_follow_up("clicks", None, control)
    assert gone.file is None and f"deployed by a rollout of {folder}, which holds no file for it now" in gone.advice

    control.write_json(ControlArea.ROLLOUT, {"folder": str(tmp_path / "on-another-worker"), "action": "deploy"})
    [unread] = spec_follow_up("clicks", None, control)
    assert unread.async_on is None and "which cannot be read here (No such file or directory)" in unread.advice


def test_an_unreadable_file_is_said_so_not_guessed(tmp_path: Path) -> None:
    spec_file = tmp_path / "clicks.yaml"
    spec_file.write_text("checkpoint: ${FOLLOW_UP_UNSET_VARIABLE}/ck\n")
    [check] = spec_follow_up("clicks", str(spec_file), _control(tmp_path))
    assert check.async_on is None and "could not be read to check it" in check.advice


def test_the_task_group_passes_the_spec_file_to_its_last_step(tmp_path: Path) -> None:
    spec_file = _file(tmp_path / "clicks.yaml")
    for spec, kwargs in ((str(spec_file), {}), (SPEC, {"spec_file": spec_file}), (SPEC, {})):
        with DAG("follow_up", schedule=None, start_date=pendulum.datetime(2026, 1, 1)) as dag:
            safe_disable_async_progress(spec, **kwargs)
        release = dag.task_dict["safe_disable.release_job"]
        assert release.spec_file == (str(spec_file) if spec is not SPEC or kwargs else None)
        assert release.job == "clicks"


def test_a_rollout_record_that_cannot_be_read_is_said_so_and_the_file_still_checked(tmp_path: Path) -> None:
    control = _control(tmp_path)
    Path(control.path(ControlArea.ROLLOUT)).write_text("{half a record")
    spec_file = _file(tmp_path / "clicks.yaml")
    unread, checked = spec_follow_up("clicks", str(spec_file), control)
    assert unread.async_on is None and "could not tell whether a rollout deployed clicks" in unread.advice
    assert "rollout.json is not valid JSON" in unread.advice
    assert (checked.file, checked.async_on) == (str(spec_file), True)
