"""``doctor`` as a user runs it: the text and JSON of a crash-looping job, exit codes, and a checkpoint whose
bytes no call changes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_async_stream.cli.commands import main
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Deployment, State, Status, now
from tests.helpers import make_checkpoint, snapshot


def doctor(capsys: pytest.CaptureFixture[str], root: Path, *args: str) -> tuple[int, str, str]:
    before = snapshot(root.parent)
    code = main(["doctor", str(root), *args])
    assert snapshot(root.parent) == before, "doctor changed a file"
    out, err = capsys.readouterr()
    return code, out, err


def test_a_crash_loop_reads_as_the_disease_its_evidence_and_the_cure(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4])
    control = ControlArea.for_checkpoint(checkpoint)
    control.ensure()
    control.write_deployment(Deployment(deployment_id="d1", job="clicks", async_progress={"enabled": False}))
    error = "java.lang.IllegalStateException: batch 6 doesn't exist"
    control.write_status(Status(deployment_id="d1", state=State.FAILED, heartbeat_at=now(), error=error))
    code, out, _ = doctor(capsys, tmp_path / "ck")
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == f"job          clicks (checkpoint {checkpoint})"
    assert lines[1].startswith("diagnosis    batch_missing: a synchronous restart dies with IllegalStateException")
    assert f"             - status error: {error}" in lines
    assert any(line.startswith("sync restart UNSAFE: offsets/6 is missing") for line in lines)
    assert "  1. the safe-disable migration (recommended) [batches run again: 1]" in lines
    assert "  3. delete offsets files by hand (what Spark's log suggests) [batches run again: 7]" in lines

    code, out, _ = doctor(capsys, tmp_path / "ck", "--json")
    data = json.loads(out)
    assert code == 1 and data["diagnosis"] == "batch_missing" and data["sync_restart_safe"] is False
    assert "safe_disable_async_progress" in data["cure"] and data["choices"][0]["re_run_batches"] == 1


def test_a_healthy_checkpoint_without_a_control_area_exits_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    make_checkpoint(tmp_path / "ck", [0, 1], [0, 1])
    code, out, _ = doctor(capsys, tmp_path / "ck")
    assert code == 0 and "diagnosis    nothing_known" in out and "- no control area" in out
    assert "choices" not in out


def test_nothing_at_the_path_is_a_usage_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    code, _, err = doctor(capsys, tmp_path / "nowhere")
    assert code == 2 and "nothing at" in err


def test_a_spec_never_deployed_has_nothing_to_cure_and_no_unsafe_verdict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """It said "sync restart UNSAFE: no checkpoint" beside "nothing to cure"."""
    spec = tmp_path / "specs" / "fresh.yaml"
    spec.parent.mkdir()
    spec.write_text(f"name: fresh\ncheckpoint: {tmp_path}/ck\nsource: {{format: rate}}\nsink: {{format: noop}}\n")
    code, out, _ = doctor(capsys, spec)
    assert code == 0 and "diagnosis    never_deployed: the job was never deployed" in out
    assert "UNSAFE" not in out and "sync restart -: no checkpoint at" in out
    assert "cure         nothing to cure: deploy it" in out
    code, out, _ = doctor(capsys, spec, "--json")
    assert (code, json.loads(out)["diagnosis"]) == (0, "never_deployed")


def test_the_cure_names_what_a_pip_user_has(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4])
    code, out, _ = doctor(capsys, tmp_path / "ck", "--json")
    cure = json.loads(out)["cure"]
    assert code == 1 and "dags/" not in cure and "from airflow_async_stream.factories import" in cure
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert "## Turning async progress tracking off: the safe-disable migration" in readme  # the section it names
