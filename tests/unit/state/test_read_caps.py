"""What a reader takes in from a control area is bounded whatever a writer made of it: a record at most
1 MiB (refused beyond, naming the file), incidents and the driver log by their newest end, an incident's texts
cut where it is recorded. Real files, no Spark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from airflow_async_stream.driver.start import log_tail
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import INCIDENT_BYTES, ControlArea
from airflow_async_stream.state.incidents import Incident, Kind, read_incidents, record_incident
from tests.unit.cli_run import cli


def test_a_record_over_a_mebibyte_is_refused_naming_it(control: ControlArea) -> None:
    Path(control.path(ControlArea.STATUS)).write_text(json.dumps({"state": "running", "error": "x" * (2 << 20)}))
    with pytest.raises(ControlAreaError, match=r"status\.json holds over 1,048,576 bytes"):
        control.read_status()
    shown = cli("status", control.url)
    assert shown.returncode == 2 and "Traceback" not in shown.stderr, shown
    assert "status.json holds over 1,048,576 bytes, more than a file of its kind may: refused" in shown.stderr


def test_incidents_are_read_from_their_newest_end(control: ControlArea) -> None:
    with open(control.path(ControlArea.INCIDENTS), "w") as fh:
        fh.write(("x" * 1000 + "\n") * (INCIDENT_BYTES // 1000 + 500))  # past the cap, none of them incidents
    record_incident(control, Incident(kind=Kind.CRASH, deployment_id="d9", since=1.0, error="the newest"))
    [newest] = read_incidents(control)
    assert (newest.deployment_id, newest.error) == ("d9", "the newest")


def test_an_incidents_texts_are_cut_where_it_is_recorded(control: ControlArea) -> None:
    huge = "y" * (5 << 20)
    record_incident(
        control,
        Incident(kind=Kind.CRASH, deployment_id="d1", since=1.0, error=huge, diagnosis=huge, cure=huge, action=huge),
    )
    assert Path(control.path(ControlArea.INCIDENTS)).stat().st_size < 10_000
    [incident] = read_incidents(control)
    assert incident.diagnosis is not None and incident.diagnosis.endswith(f"... ({5 << 20:,} chars)")


def test_the_driver_log_is_read_from_its_newest_end(control: ControlArea) -> None:
    with open(control.path(ControlArea.DRIVER_LOG), "w") as fh:
        fh.write("old line\n" * ((3 << 20) // 9) + "the last line\n")  # 3 MiB
    assert log_tail(control, lines=1) == "the last line"


def _segment(control: ControlArea, number: int, lines: int, pad: int = 0) -> None:
    folder = Path(control.path(ControlArea.PROGRESS))
    folder.mkdir(parents=True, exist_ok=True)
    events = [{"deployment_id": "d1", "batchId": number * 1000 + i, "pad": "p" * pad} for i in range(lines)]
    (folder / f"d1-{number:06d}-t1700000000.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))


def test_a_progress_segment_past_its_cap_is_refused_naming_it(control: ControlArea) -> None:
    from airflow_async_stream.state.progress_log import SEGMENT_READ_BYTES

    _segment(control, 1, 3)
    _segment(control, 2, SEGMENT_READ_BYTES // (1 << 20) + 2, pad=1 << 20)  # a writer's segment is never this big
    with pytest.raises(ControlAreaError, match=r"d1-000002-t1700000000\.jsonl holds over [\d,]+ bytes"):
        control.read_progress()


def test_the_whole_progress_log_is_read_by_its_newest_segments_only(
    control: ControlArea, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_async_stream.state import progress_log

    for number in range(1, 6):
        _segment(control, number, 10, pad=100)
    size = Path(control.path(ControlArea.PROGRESS), "d1-000001-t1700000000.jsonl").stat().st_size
    monkeypatch.setattr(progress_log, "READ_MAX_BYTES", 2 * size)  # 2 segments' worth, not 5
    assert sorted({e["batchId"] // 1000 for e in control.read_progress()}) == [4, 5]


def test_a_spec_cannot_keep_more_progress_than_a_reader_takes_in() -> None:
    from airflow_async_stream.exceptions import SpecError
    from airflow_async_stream.spec.load import parse_spec
    from tests.helpers import rate_noop

    with pytest.raises(SpecError) as bad:
        parse_spec(rate_noop("job", "/tmp/ck", logs={"progress_max_bytes": 1 << 30}))
    assert bad.value.problems[0][0] == "logs.progress_max_bytes" and "67108864" in bad.value.problems[0][1]
