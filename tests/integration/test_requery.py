"""A query whose sink fails for a moment is restarted inside its live driver (same pid, no new JVM, one
incident, batches go on); a permanent error is not retried there: the driver ends failed, as before."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import Kind, read_incidents
from tests.helpers import until

pytestmark = pytest.mark.integration


def test_a_sink_unreachable_for_a_moment_is_requeried_in_the_driver_a_permanent_error_is_not(
    checkpoint_dir: str, user_code_on_path: Path, tmp_path: Path
) -> None:
    flag = tmp_path / "sink-flag"
    spec = parse_spec(
        {
            "name": "flaky-sink",
            "checkpoint": checkpoint_dir,
            "application": str(user_code_on_path / "flaky_sink_app.py"),
            "sink": {"format": "flaky", "options": {"flag": str(flag)}},
            "trigger": {"processing_time": "200 milliseconds"},
            "restart": {"backoff": "1 second", "max_restarts": 3},
        }
    )
    deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    control = ControlArea.for_checkpoint(checkpoint_dir)
    first = control.read_status()
    assert first is not None and first.state == "running"

    flag.write_text("refuse")  # the next commit fails once: ConnectionRefusedError
    status = until(
        lambda: (
            (s := control.read_status())
            and s.query_restarts
            and s.query_run_id != first.query_run_id
            and s.batches >= first.batches + 3
            and s
        ),  # type: ignore[union-attr]
        timeout_s=90,
        every_s=0.1,
    )
    assert not flag.exists()
    assert (status.pid, status.deployment_id, status.state) == (first.pid, first.deployment_id, "running")
    assert status.query_id == first.query_id and len(status.query_restarts) == 1  # the same query, a new run
    [restart] = [i for i in read_incidents(control) if i.kind == Kind.QUERY_RESTART]
    assert restart.diagnosis == "transient: ConnectionRefusedError"
    assert (restart.error or "").startswith("ConnectionRefusedError: [Errno 111] Connection refused")
    assert restart.action == "restarted its query in the driver after 1.0 s"
    os.kill(status.pid, 0)  # the driver process still lives

    flag.write_text("reject")  # permanent: the driver ends failed, no restart in it
    ended = until(lambda: (s := control.read_status()) and s.state == "failed" and s, timeout_s=90, every_s=0.1)  # type: ignore[union-attr]
    assert "rejects the batch" in (ended.error or "") and len(ended.query_restarts) == 1
    assert len([i for i in read_incidents(control) if i.kind == Kind.QUERY_RESTART]) == 1
    flag.unlink()
