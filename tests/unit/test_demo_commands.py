"""The main job's last lines: the commands that show the job again work as printed, from a new shell."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from tests.unit.helpers import fake_deployment, gapped_checkpoint

REPO = Path(__file__).resolve().parents[2]


def _demo():  # scripts/ is not a package: load the main job's module from its file
    spec = importlib.util.spec_from_file_location("demo", REPO / "scripts" / "demo.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_printed_commands_work_in_a_new_shell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    demo = _demo()
    checkpoint = tmp_path / "checkpoints" / demo.JOB
    control = fake_deployment(checkpoint.parent)  # at checkpoints/ck: move it where the demo puts its job
    os.rename(control.root, f"{checkpoint}.async-stream")
    gapped_checkpoint(checkpoint)
    demo_env = {"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "var-registry")}
    sessions = os.environ.get("AIRFLOW_ASYNC_STREAM_HOME")
    with monkeypatch.context() as scoped:  # the session's own registry variable is back afterwards
        scoped.setenv("AIRFLOW_ASYNC_STREAM_HOME", demo_env["AIRFLOW_ASYNC_STREAM_HOME"])
        registry.record(demo.JOB, str(checkpoint), f"{checkpoint}.async-stream", "d1")
    assert os.environ.get("AIRFLOW_ASYNC_STREAM_HOME") == sessions, "the session's registry variable was lost"

    commands = demo.look_commands(demo_env, str(checkpoint))
    assert any(f" status {demo.JOB}" in c for c in commands) and any(" inspect " in c for c in commands)
    # A new shell: not the demo's environment, another directory, a HOME with no registry of its own.
    shell_env = {k: v for k, v in os.environ.items() if k != "AIRFLOW_ASYNC_STREAM_HOME"} | {"HOME": str(tmp_path)}
    for command in commands:
        ran = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=shell_env, cwd="/")
        unsafe = " inspect " in command and "sync restart    UNSAFE" in ran.stdout  # exit 1: a bad state, said
        assert ran.returncode == (1 if unsafe else 0), (command, ran.stderr)
        assert str(checkpoint) in ran.stdout and ran.stderr == "", (command, ran.stdout)
    # The variable is what makes the job name work: without it the name is unknown here.
    bare = commands[0].split(" ", 1)[1]
    unknown = subprocess.run(["bash", "-c", bare], capture_output=True, text=True, env=shell_env, cwd="/")
    assert unknown.returncode == 2 and f"no job named '{demo.JOB}'" in unknown.stderr


def test_a_second_run_measures_its_own_pauses_only(tmp_path: Path) -> None:
    """A second demo on an existing var/ reported the 772 s between the two runs as the longest idle time."""
    demo = _demo()
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    runs = [("d1", 1, 0.0), ("d1", 2, 1.0), ("d2", 3, 773.0), ("d2", 4, 774.0), ("d2", 5, 775.9)]  # second run at 772
    for deployment, batch, at in runs:
        start = datetime.fromtimestamp(1_800_000_000 + at, UTC).isoformat()
        control.append_progress(
            {
                "deployment_id": deployment,
                "batch_id": batch,
                "timestamp": start,
                "duration_ms": {"triggerExecution": 500, "addBatch": 400},
            }
        )
    text = demo.longest_idle_text(str(tmp_path / "ck"), since=1_800_000_000 + 772)
    assert text.startswith("longest idle time between consecutive micro-batches: 1.40 s (after batch 4, before batch 5")
    assert demo.longest_idle_text(str(tmp_path / "ck"), since=1_800_000_000).startswith(
        "longest idle time between consecutive micro-batches: 771.50 s"  # the whole log: what it said before
    )
