"""The README's first DAG, copied as a user would, with the README's own spec: it runs on real Spark."""

from __future__ import annotations

import pytest
import yaml

from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from tests.integration.helpers import run_dag, task_states, write_dag
from tests.readme_blocks import BLOCKS, DAG_FOLDER, FULL_SPEC_NAME, full_spec
from tests.session import DAGS_FOLDER

pytestmark = pytest.mark.integration


def test_the_readmes_first_dag_runs_as_written(airflow_db: None, checkpoint_dir: str) -> None:
    [block] = [b for b in BLOCKS if b.kind == "dags" and b.arg == "clicks"]
    spec = full_spec()
    readme_checkpoint = yaml.safe_load(spec)["checkpoint"]
    (DAGS_FOLDER / "specs" / f"{FULL_SPEC_NAME}.yaml").write_text(spec.replace(readme_checkpoint, checkpoint_dir))
    path = write_dag("readme_first_dag", block.body.replace(DAG_FOLDER, str(DAGS_FOLDER)))

    run = run_dag(path, "clicks")

    assert task_states(run) == {"deploy": "success", "two_batches": "success", "stop": "success"}
    status = ControlArea.for_checkpoint(checkpoint_dir).read_status()
    assert status is not None and status.job == FULL_SPEC_NAME and status.state == "stopped"
    assert len(batch_ids(checkpoint_dir, "commits")) >= 2
