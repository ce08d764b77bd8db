"""Nothing a control area says decides what runs: the supervisor, ``resume``, a rollback, a switch and the tuner
run only a spec the Airflow side itself handed to the job's drivers (state/issued.py). Each attack as an
attacker who can write one control area (no shell on an Airflow host) would make it; fake drivers, no Spark."""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.autotune.tune import TuneSettings, tune_job
from airflow_async_stream.decision.needs import How
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import RolloutError, UntrustedSpecError
from airflow_async_stream.operators.supervise import SuperviseJobsOperator
from airflow_async_stream.rollout.apply import ApplySettings, apply_item
from airflow_async_stream.rollout.planner import PlanItem
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import issued
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import Kind, read_incidents
from airflow_async_stream.supervise.act import SuperviseSettings, supervise_job
from airflow_async_stream.supervise.recover import recovery_spec
from airflow_async_stream.switch.request import issued_running_spec
from tests.fake_driver import launcher as fake_launcher
from tests.fake_driver import started
from tests.helpers import rate_noop
from tests.unit.cli_run import cli


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This host's own folder (the registry and the kept specs), also for the CLI's commands."""
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _deployed(tmp_path: Path, name: str = "job", **changes: Any) -> tuple[ControlArea, JobSpec]:
    """A job as a deploy leaves it: spec.json, and the spec kept on this host."""
    spec = parse_spec(rate_noop(name, str(tmp_path / name), **changes))
    control = ControlArea.for_checkpoint(spec.checkpoint)
    control.ensure()
    control.write_bytes(ControlArea.SPEC, spec.to_json_bytes())
    issued.keep(spec, "d3", "deploy")
    return control, spec


def _evil(spec: JobSpec, tmp_path: Path) -> dict[str, Any]:
    """The spec with the attacker's code and a Java option: what the report's stable.json held."""
    marker = tmp_path / "evil-ran"
    (tmp_path / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    return {
        "name": spec.name,
        "checkpoint": spec.checkpoint,
        "application": str(tmp_path / "evil.py"),
        "spark_conf": {"spark.driver.extraJavaOptions": "-javaagent:/tmp/evil.jar"},
    }


def _crashed(control: ControlArea) -> None:
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d3", "deployed_at": time.time() - 100})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d3",
            "state": "failed",
            "batches": 4,
            "last_batch_id": 9,
            "error": "SIGKILL",
            "finished_at": time.time() - 50,
            "heartbeat_at": time.time() - 50,
        },
    )


def _untrusted(control: ControlArea) -> list[Any]:
    return [i for i in read_incidents(control) if i.kind == Kind.UNTRUSTED_SPEC]


def test_a_kept_spec_comes_back_as_kept_from_the_drivers_own_form(tmp_path: Path, home: Path) -> None:
    control, spec = _deployed(tmp_path)
    # stable.json holds the spec as the driver writes it (to_mapping); spec.json as the deploy wrote it
    assert issued.issued(control, spec.to_mapping(), "stable.json") == spec
    assert issued.issued(control, json.loads(control.read_bytes(ControlArea.SPEC)), "spec.json") == spec
    assert [p.name for p in issued.kept_folder("job").iterdir()] == [f"{issued.digest(spec)}.json"]
    assert _untrusted(control) == []


def test_kept_specs_are_capped_per_job(tmp_path: Path) -> None:
    control, spec = _deployed(tmp_path)
    for ms in range(issued.KEPT + 5):
        issued.keep(
            parse_spec(deep_merge(spec.to_mapping(), {"async_progress": {"checkpoint_interval_ms": ms}})),
            f"d{ms}",
            "switch",
        )
    kept = list(issued.kept_folder("job").iterdir())
    assert len(kept) == issued.KEPT
    newest = parse_spec(deep_merge(spec.to_mapping(), {"async_progress": {"checkpoint_interval_ms": issued.KEPT + 4}}))
    assert issued.issued(control, newest.to_mapping(), "stable.json") == newest
    with pytest.raises(UntrustedSpecError):  # the first deploy's spec is the oldest: no longer kept
        issued.issued(control, spec.to_mapping(), "stable.json")


def test_the_supervisor_never_runs_a_forged_stable_spec(tmp_path: Path) -> None:
    control, spec = _deployed(tmp_path)
    _crashed(control)
    control.write_json(ControlArea.STABLE, {"deployment_id": "d3", "spec": _evil(spec, tmp_path)})
    settings = SuperviseSettings(deploy=DeploySettings(launcher=fake_launcher(), startup_timeout_s=20))

    outcome = supervise_job(control, Holder.this_process("supervisor"), settings)

    assert (outcome.act, outcome.alert) == ("nothing", "untrusted_spec"), outcome
    assert "not a spec this host deployed or switched job 'job' to" in outcome.reason
    assert "in application, " in outcome.reason and "spark_conf.spark.driver.extraJavaOptions" in outcome.reason
    assert control.read_deployment().deployment_id == "d3"  # type: ignore[union-attr]  # nothing launched
    assert not (tmp_path / "evil-ran").exists()
    [incident] = _untrusted(control)
    assert incident.action == "refused: nothing was run from it" and "application" in (incident.error or "")
    again = supervise_job(control, Holder.this_process("supervisor"), settings)
    assert again.alert == "untrusted_spec" and len(_untrusted(control)) == 1  # recorded once


def test_a_stable_spec_naming_another_jobs_checkpoint_takes_nothing_over(tmp_path: Path) -> None:
    control, _ = _deployed(tmp_path)
    other, other_spec = _deployed(tmp_path, "other")
    _crashed(control)
    control.write_json(ControlArea.STABLE, {"deployment_id": "d3", "spec": other_spec.to_mapping()})  # a real spec

    outcome = supervise_job(
        control,
        Holder.this_process("supervisor"),
        SuperviseSettings(deploy=DeploySettings(launcher=fake_launcher(), startup_timeout_s=20)),
    )

    assert (outcome.act, outcome.alert) == ("nothing", "untrusted_spec")
    assert f"names checkpoint {other_spec.checkpoint!r}, which is not this job's" in outcome.reason
    assert other.read_deployment() is None and other.read_status() is None  # the other job untouched
    assert len(_untrusted(control)) == 1 and _untrusted(other) == []


def test_resume_refuses_a_forged_stable_spec(tmp_path: Path) -> None:
    control, spec = _deployed(tmp_path)
    _crashed(control)
    control.write_json(ControlArea.STABLE, {"deployment_id": "d3", "spec": _evil(spec, tmp_path)})

    done = cli("resume", spec.checkpoint, "--startup-timeout", "5")

    assert done.returncode == 1 and done.stderr.startswith("airflow-async-stream: not resumed: "), done
    assert "differs from the last one (deployment d3) in application, " in done.stderr, done
    assert "Traceback" not in done.stderr and not (tmp_path / "evil-ran").exists()
    assert control.read_deployment().deployment_id == "d3"  # type: ignore[union-attr]
    assert len(_untrusted(control)) == 1


def test_a_switch_never_launders_a_forged_spec_json(tmp_path: Path) -> None:
    control, spec = _deployed(tmp_path)
    control.write_bytes(ControlArea.SPEC, json.dumps(_evil(spec, tmp_path)).encode())
    # What a change is made from: a switch from it would have kept the forged spec as issued.
    with pytest.raises(UntrustedSpecError, match="differs from the last one"):
        issued_running_spec(control)
    switched = cli("switch", spec.checkpoint, "--set", "async_progress.checkpoint_interval_ms=500")
    assert switched.returncode != 0 and "refused: no spec runs from a control area alone" in switched.stderr, switched
    assert len(list(issued.kept_folder("job").iterdir())) == 1  # nothing more kept


def test_the_tuner_reads_what_a_job_delegates_from_the_kept_spec(tmp_path: Path) -> None:
    control, spec = _deployed(tmp_path, async_progress={"enabled": False})
    forged = deep_merge(spec.to_mapping(), {"async_progress": {"enabled": "auto"}})
    control.write_bytes(ControlArea.SPEC, json.dumps(forged).encode())
    with pytest.raises(UntrustedSpecError, match=r"in async_progress\.auto"):
        tune_job(control, Holder.this_process("tuner"), TuneSettings())
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None
    assert len(_untrusted(control)) == 1


@pytest.fixture
def running_job(tmp_path: Path) -> Iterator[tuple[ControlArea, JobSpec]]:
    """A job whose (fake) driver runs and obeys stops, deployed by this host."""
    control, spec = _deployed(tmp_path)
    processes: list[subprocess.Popen[bytes]] = []
    started(control, "d3", "--obey", "--record-deployment", processes=processes)
    yield control, spec
    for process in processes:
        process.kill()
        process.wait()


def test_a_rollback_never_runs_a_forged_stable_spec(running_job: tuple[ControlArea, JobSpec], tmp_path: Path) -> None:
    control, spec = running_job
    control.write_json(ControlArea.STABLE, {"deployment_id": "d3", "spec": _evil(spec, tmp_path)})
    wanted = deep_merge(spec.to_mapping(), {"source": {"options": {"rowsPerSecond": 7}}})
    item = PlanItem(
        "job",
        "update",
        "changed: source.options",
        control_url=control.url,
        checkpoint=spec.checkpoint,
        desired_spec=wanted,
        how=How.RESTART,
    )
    (tmp_path / "desired").mkdir()
    (tmp_path / "desired" / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    # The new (fake) driver commits no batch: the change fails after the old driver stopped, and rolls back.
    settings = ApplySettings(
        folder=str(tmp_path / "desired"),
        wait_timeout_s=1,
        deploy=DeploySettings(launcher=fake_launcher(), startup_timeout_s=20),
    )

    with pytest.raises(RolloutError, match="not rolled back: .* differs from the last one") as failed:
        apply_item(item, Holder.this_process("rollout test"), settings)

    assert "in application, " in str(failed.value) and "extraJavaOptions" in str(failed.value)
    assert not (tmp_path / "evil-ran").exists()
    assert json.loads(control.read_bytes(ControlArea.SPEC))["source"]["options"] == {"rowsPerSecond": 7}
    assert len(_untrusted(control)) == 1


def test_a_job_of_the_supervisors_desired_folder_restarts_from_its_file(tmp_path: Path) -> None:
    """Another host deployed it (nothing kept here): its desired folder, read by the supervisor, is trusted."""
    spec = parse_spec(rate_noop("job", str(tmp_path / "job")))
    control = ControlArea.for_checkpoint(spec.checkpoint)
    control.ensure()
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d3", "job": "job"})
    control.write_json(ControlArea.STABLE, {"deployment_id": "d3", "spec": _evil(spec, tmp_path)})
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "job.json").write_text(json.dumps(spec.to_mapping()))
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    desired = SuperviseJobsOperator(task_id="supervise", desired_folders=[str(folder)])._desired()

    assert recovery_spec(control, desired) == (spec, "its spec in the desired folder")
    elsewhere = parse_spec(rate_noop("job", str(tmp_path / "elsewhere")))  # the file names another checkpoint
    with pytest.raises(UntrustedSpecError, match="this host never deployed or switched job 'job'"):
        recovery_spec(control, {"job": elsewhere})
