"""The README's examples in the order a user runs them, copied as written, with the README's own spec, on real
Spark: the first DAG leaves its job running, the safe-disable DAG changes it while it runs (so every pause is
one between two batches of a running job), the switch examples each change something, and the job is stopped
as the README says."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from tests.integration.helpers import run_dag, task_states, write_dag, xcom
from tests.readme_blocks import BLOCKS, DAG_FOLDER, FULL_SPEC_NAME, full_spec
from tests.session import DAGS_FOLDER

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def _dag_block(dag_id: str) -> str:
    [block] = [b for b in BLOCKS if b.kind == "dags" and b.arg == dag_id]
    return block.body.replace(DAG_FOLDER, str(DAGS_FOLDER))


def _cli(line: str, checkpoint: str) -> subprocess.CompletedProcess[str]:
    words = shlex.split(line.split("   #", 1)[0].replace("/data/ck/clicks-to-alerts", checkpoint))
    assert words[0] == "airflow-async-stream", line
    return subprocess.run([CLI, *words[1:]], capture_output=True, text=True, timeout=180)


def test_the_readmes_examples_run_in_order_on_one_running_job(airflow_db: None, checkpoint_dir: str) -> None:
    spec = full_spec()
    readme_checkpoint = yaml.safe_load(spec)["checkpoint"]
    (DAGS_FOLDER / "specs" / f"{FULL_SPEC_NAME}.yaml").write_text(spec.replace(readme_checkpoint, checkpoint_dir))
    control = ControlArea.for_checkpoint(checkpoint_dir)

    first = run_dag(write_dag("readme_first_dag", _dag_block("clicks")), "clicks")
    assert task_states(first) == {"deploy": "success", "two_batches": "success"}
    status = control.read_status()
    assert status is not None and status.job == FULL_SPEC_NAME and status.state == "running"  # left running
    assert len(batch_ids(checkpoint_dir, "commits")) >= 2

    migrated = run_dag(write_dag("readme_disable", _dag_block("disable_async_for_clicks")), "disable_async_for_clicks")
    steps = task_states(migrated)
    assert steps.pop("safe_disable.rollback_to_async") == "skipped" and set(steps.values()) == {"success"}, steps
    stages = xcom(migrated, "safe_disable.release_job")["stages"]
    assert [(s["to"], s["how"]) for s in stages] == [("async_interval_0", "in_place"), ("synchronous", "in_place")]
    assert all(0 < s["pause_s"] < 10 for s in stages), stages  # between two batches of the running job

    [block] = [b for b in BLOCKS if b.kind == "switch"]
    lines = block.body.splitlines()
    for line in lines:
        result = _cli(line, checkpoint_dir)
        assert result.returncode == 0, (line, result.stdout, result.stderr)
        assert "nothing to switch" not in result.stdout, line  # each example changes something real
    account = json.loads(result.stdout)
    assert account["outcome"] == "switched" and account["pause_s"] is not None
    configuration = control.read_status().configuration
    assert configuration["async_progress"]["enabled"] is False
    assert configuration["trigger"] == {"processing_time": "2 seconds"}

    again = _cli(lines[0], checkpoint_dir)  # the job runs at 2 seconds already
    assert again.returncode == 0 and again.stdout.startswith("nothing to switch"), again

    stopped = _cli(f"airflow-async-stream stop {FULL_SPEC_NAME}", checkpoint_dir)
    assert stopped.returncode == 0 and stopped.stdout.startswith("stopped"), stopped
