"""A switch's new query starts its first batch while the driver records it: the query's ids are py4j calls (two
apiece in PySpark), so the governor reads each once, and not at all what the switch's account already holds.
The query is a stand-in (no JVM) that counts the reads."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.requests import SwitchAccount, SwitchPhase
from tests.helpers import rate_noop


class CountingQuery:
    def __init__(self) -> None:
        self.reads = {"id": 0, "runId": 0}

    @property
    def id(self) -> str:
        self.reads["id"] += 1
        return "query-1"

    @property
    def runId(self) -> str:  # noqa: N802 (PySpark's name)
        self.reads["runId"] += 1
        return "run-2"


def test_a_switched_query_is_recorded_reading_its_ids_at_most_once(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "job.async-stream"))
    control.ensure()
    governor = Governor(control, "dep-1", "job")
    spec = parse_spec(rate_noop("job", checkpoint=str(tmp_path / "ck")))
    record = SwitchAccount(
        request_id="r1",
        deployment_id="dep-1",
        phase=SwitchPhase.STARTED,
        before={},
        requested_at=1.0,
        query_run_id="run-2",
    )
    query = CountingQuery()
    governor.switched(query, spec, None, record)  # type: ignore[arg-type]
    assert query.reads == {"id": 1, "runId": 0}  # the run id came with the account
    status = control.read_status()
    assert status is not None and (status.query_id, status.query_run_id, status.switches) == ("query-1", "run-2", 1)
    again = CountingQuery()
    governor.switched(again, spec, None, None)  # type: ignore[arg-type]  # a failed switch: the old query again
    assert again.reads == {"id": 1, "runId": 1}
