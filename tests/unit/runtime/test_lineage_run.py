"""The governor feeds the driver's OpenLineage run (lineage/running.py): every recorded batch once, and the end
of the deployment as COMPLETE or FAIL with the error masked. No JVM: Spark's progress events are stand-ins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from airflow_async_stream.lineage.link import RunningSettings
from airflow_async_stream.lineage.running import RunningEvents
from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import Redactor
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.unit.helpers import progress_event


def _governed(tmp_path: Path, secret: str = "s3cret-jaas-1") -> tuple[Governor, list[Any]]:
    control = ControlArea(str(tmp_path / "job.async-stream"))
    control.ensure()
    redact = Redactor([secret])
    governor = Governor(control, "dep-1", "job", redact)
    sent: list[Any] = []
    governor.lineage = RunningEvents(parse_spec(rate_noop("job")), RunningSettings(), 3600, redact, emit=sent.append)
    governor.lineage.started()
    return governor, sent


def test_each_recorded_batch_counts_once_and_a_stop_completes_the_run(tmp_path: Path) -> None:
    governor, sent = _governed(tmp_path)
    for batch_id in (0, 1, 1, 2):  # the end-of-query flush reports a batch the listener had: counted once
        governor.record_progress(progress_event(batch_id))
    governor._finish("stopped")
    assert [e.eventType.value for e in sent] == ["START", "COMPLETE"]
    progress = sent[-1].run.facets["asyncStream_progress"]
    assert (progress.batches, progress.rows, progress.last_batch_id) == (3, 30, 2)


def test_a_failed_deployment_fails_the_run_with_its_error_masked(tmp_path: Path) -> None:
    governor, sent = _governed(tmp_path)
    governor.fail("Kafka login failed for s3cret-jaas-1")
    assert [e.eventType.value for e in sent] == ["START", "FAIL"]
    assert sent[-1].run.facets["errorMessage"].message == "Kafka login failed for ***"
