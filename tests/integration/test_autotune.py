"""The tuner on real PySpark drivers, every change in place: a job whose offset management is most of a
synchronous batch gets async on and keeps it with a measured saving (one probe of a longer interval, within
three changes); a regression injected after that
(each batch made slow by a file the test writes, outside the spec) is reverted through the safe-disable
migration, and not tried again under the same spec; a person's change during a trial's measurement aborts it
with no change of the tuner's; a job whose batches are long is left synchronous, and with async on it is
turned off through the migration first; a pinned job is never touched."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.autotune.decide import decide
from airflow_async_stream.autotune.look import TunerAct
from airflow_async_stream.autotune.tune import Tuned, TuneSettings, look_at, tune_job, tune_until_settled
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.tuning import read_tuning
from airflow_async_stream.switch.request import running_spec, switch_in_place
from tests.helpers import rate_noop, until
from tests.integration.helpers import run_dag, write_dag, xcom

pytestmark = pytest.mark.integration
TUNER = Holder.this_process("autotune")
PERSON = Holder.this_process("person")
DEPLOY = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)
SETTINGS = TuneSettings(deploy=DEPLOY, wait_timeout_s=120)
BOUNDS = {"measure_batches": 8, "min_saving": 0.2, "at_most_every": "0 seconds", "max_rerun_seconds": 5}


def _job(checkpoint: str, async_progress: dict[str, Any], **bounds: Any) -> JobSpec:
    return parse_spec(
        rate_noop(
            "tuned",
            checkpoint,
            rows=200,
            trigger={"processing_time": "100 milliseconds"},
            transform={"entrypoint": "user_jobs.transforms:slowed"},
            async_progress=async_progress,
            autotune={**BOUNDS, **bounds},
        )
    )


@pytest.fixture
def slow_file(user_code_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "slow-ms"
    monkeypatch.setenv("SLOW_BATCH_FILE", str(path))
    return path


def _settle(control: ControlArea) -> list[Tuned]:
    return tune_until_settled(control, TUNER, SETTINGS, timeout_s=240, poll_s=0.5)


def _acts(steps: list[Tuned]) -> list[str]:
    return [s.act for s in steps if s.act != TunerAct.WAIT]


def _running_async(control: ControlArea) -> dict[str, Any]:
    return running_spec(control).async_progress.in_effect()


def test_async_that_pays_is_kept_a_regression_reverted_a_person_s_change_respected(
    airflow_db: None, checkpoint_dir: str, slow_file: Path
) -> None:
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(_job(checkpoint_dir, {"enabled": "auto", "checkpoint_interval_ms": "auto"}), TUNER, DEPLOY)

    # 1. Synchronous, offset management most of each batch: measured, turned on in place, measured, kept (after
    # one probe of the longest interval allowed, kept or undone).
    steps = _settle(control)
    acts = _acts(steps)
    assert acts[:2] == ["try", "retune"] and acts[2:] in (["keep"], ["retune", "nothing"]), [s.line() for s in steps]
    decisions = read_tuning(control).decisions
    judged = next(d for d in decisions if d.get("saving") is not None)  # the trial's async window against sync
    assert judged["saving"] >= 0.2 and judged["after"]["p50_ms"] < judged["before"]["p50_ms"] * 0.8, judged
    assert sum(d["switches"] for d in decisions) <= 3
    assert _running_async(control)["enabled"] is True
    assert control.read_status().deployment_id == decisions[0]["deployment_id"]  # every change in place

    # 2. A regression after the switch (each batch slow, the spec unchanged): reverted through the migration.
    slow_file.write_text("400")
    looks: list[Tuned] = []
    until(
        lambda: looks.append(tune_job(control, TUNER, SETTINGS)) or looks[-1].act != "nothing",
        120,
        what="the tuner to see the regression",
        every_s=0.5,
    )
    assert looks[-1].act == "revert" and looks[-1].switches == 2, looks[-1].line()
    assert "safe-disable migration" in looks[-1].reason and looks[-1].saving < 0.2
    assert _running_async(control)["enabled"] is False
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe
    slow_file.unlink()
    again = tune_job(control, TUNER, SETTINGS)
    assert again.act == "nothing" and "reverted under this spec" in again.reason  # not retried

    # 3. A person changes the spec (another trigger): tried again; a person's switch during its measurement
    # aborts the trial, and the tuner makes no change of its own.
    person = parse_spec(
        deep_merge(running_spec(control).to_mapping(), {"trigger": {"processing_time": "150 milliseconds"}})
    )
    switch_in_place(control, person, holder=PERSON)
    until(
        lambda: tune_job(control, TUNER, SETTINGS).act == "try", 120, what="a trial under the changed spec", every_s=0.5
    )
    tuning = read_tuning(control)
    assert tuning.trial is not None and tuning.trial.kind == "on", tuning.decisions[-1]
    by_hand = deep_merge(running_spec(control).to_mapping(), {"async_progress": {"checkpoint_interval_ms": 4000}})
    switch_in_place(control, parse_spec(by_hand), holder=PERSON)
    aborted = tune_job(control, TUNER, SETTINGS)
    assert aborted.act == "abort" and aborted.switches == 0, aborted.line()
    assert _running_async(control) == {"enabled": True, "checkpoint_interval_ms": 4000}
    assert read_tuning(control).trial is None


def test_long_batches_are_left_synchronous_after_the_migration_and_pinned_is_never_touched(
    airflow_db: None, checkpoint_dir: str, slow_file: Path
) -> None:
    slow_file.write_text("1500")  # each batch ~1.5 s: offset management a small share even on a loaded host
    control = ControlArea.for_checkpoint(checkpoint_dir)
    tuned_on = {"enabled": True, "checkpoint_interval_ms": 1000, "auto": ["enabled", "checkpoint_interval_ms"]}
    deploy_job(_job(checkpoint_dir, tuned_on, measure_batches=5), TUNER, DEPLOY)  # batches long: p50 of 5 is clear

    steps = _settle(control)
    assert _acts(steps) == ["sample", "nothing"], [s.line() for s in steps]
    assert steps[0].switches == 2  # interval 0, then synchronous through the gate
    assert steps[-1].reason.startswith("left synchronous") and "under autotune.min_saving" in steps[-1].reason
    assert _running_async(control)["enabled"] is False
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe

    # Pinned by a person: looked at, never changed, nothing recorded.
    pinned = deep_merge(running_spec(control).to_mapping(), {"async_progress": {"enabled": True}})
    pinned["async_progress"].pop("auto")
    switch_in_place(control, parse_spec(pinned), holder=PERSON)
    decisions = len(read_tuning(control).decisions)
    skipped = tune_job(control, TUNER, SETTINGS)
    assert skipped.act == "skip" and "pins" in skipped.reason
    assert len(read_tuning(control).decisions) == decisions
    assert _running_async(control) == {"enabled": True, "checkpoint_interval_ms": 1000}


def test_the_autotune_dag_takes_a_step_for_each_job_of_its_folder(
    airflow_db: None, checkpoint_dir: str, slow_file: Path
) -> None:
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(_job(checkpoint_dir, {"enabled": "auto", "checkpoint_interval_ms": "auto"}), TUNER, DEPLOY)
    until(lambda: decide(look_at(control, SETTINGS)).act == "try", 120, what="a synchronous baseline", every_s=0.5)
    folder = str(Path(checkpoint_dir).parent)
    path = write_dag(
        "autotune_fleet",
        f"""
        from airflow_async_stream.factories import autotune_dag
        autotune_dag(checkpoint_folders=[{folder!r}], dag_id="autotune_fleet", schedule=None)
    """,
    )
    run = run_dag(path, "autotune_fleet")
    assert run.state == "success"
    [step] = [s for s in xcom(run, "autotune") if s["control_url"] == control.url]
    assert step["act"] == "try" and step["switches"] == 1, step
    assert _running_async(control)["enabled"] is True
    trial = read_tuning(control).trial
    assert trial is not None and trial.kind == "on"
