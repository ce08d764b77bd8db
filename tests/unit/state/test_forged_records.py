"""Every control-area record is checked where it is read: a field of the wrong type, a number past any sane
size, nesting past the stack, is a ControlAreaError naming the file and the field (the CLI: one line, exit
2), never a TypeError or a traceback later where the field is used. Hypothesis writes the wrong values."""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_async_stream.cli import PREFIX
from airflow_async_stream.cli.commands import main
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token
from airflow_async_stream.state.incidents import read_incidents

AT = time.time()
RECORDS: dict[str, dict[str, Any]] = {
    ControlArea.STATUS: {"deployment_id": "d1", "state": "stopped", "heartbeat_at": AT, "job": "j", "batches": 2},
    ControlArea.DEPLOYMENT: {
        "deployment_id": "d1",
        "state": "submitted",
        "deployed_at": AT,
        "driver": {"kind": "local-process", "host": "h", "launcher_pid": 12, "launcher_started": 5},
    },
    ControlArea.HOLD: {"holder": "run 1", "purpose": "deploy", "acquired_at": AT, "expires_at": AT + 60, "token": 1},
    ControlArea.SWITCH_REQUEST: {
        "request_id": "r1",
        "deployment_id": "d1",
        "spec": {"name": "j"},
        "hold_token": 1,
        "graceful_timeout_s": 5,
    },
    ControlArea.SWITCH_ACCOUNT: {"request_id": "r1", "deployment_id": "d1", "phase": "done", "pause_s": 0.5},
    ControlArea.STOP_REQUEST: {"deployment_id": "d1", "reason": "r", "graceful_timeout_s": 5.0},
    ControlArea.DRIVER_EXIT: {"deployment_id": "d1", "host": "h", "exited_at": AT},
}
READERS: dict[str, Callable[[ControlArea], Any]] = {
    ControlArea.STATUS: ControlArea.read_status,
    ControlArea.DEPLOYMENT: ControlArea.read_deployment,
    ControlArea.HOLD: ControlArea.read_hold,
    ControlArea.SWITCH_REQUEST: ControlArea.read_switch_request,
    ControlArea.SWITCH_ACCOUNT: ControlArea.read_switch_account,
    ControlArea.STOP_REQUEST: lambda control: control.stop_request_for("d1"),
    ControlArea.DRIVER_EXIT: lambda control: control.read_exit("d1"),
}
JSON = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**30) | st.floats() | st.text(max_size=20),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
    max_leaves=6,
)
AREA = ControlArea(tempfile.mkdtemp(prefix="forged-") + "/ck.async-stream")
AREA.ensure()


def _field(name: str, draw: Any) -> tuple[list[str], Any]:
    record = RECORDS[name]
    path = [draw(st.sampled_from(sorted(record)))]
    if isinstance(record[path[0]], dict) and record[path[0]] and draw(st.booleans()):
        path.append(draw(st.sampled_from(sorted(record[path[0]]))))
    return path, draw(JSON)


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_every_reader_names_the_file_and_field_of_a_wrong_value(data: Any) -> None:
    name = data.draw(st.sampled_from(sorted(RECORDS)))
    path, value = _field(name, data.draw)
    record = json.loads(json.dumps(RECORDS[name]))
    (record if len(path) == 1 else record[path[0]])[path[-1]] = value
    AREA.write_bytes(name, json.dumps(record, allow_nan=True).encode())
    try:
        READERS[name](AREA)
    except ControlAreaError as exc:
        assert f"{AREA.url}/{name}" in str(exc)
        assert path[-1] in str(exc) or "names no" in str(exc) or "is none of" in str(exc), str(exc)
        assert len(str(exc)) < 400, "a long value is cut"


FORGED = {
    "a heartbeat that is no number": (ControlArea.STATUS, {**RECORDS[ControlArea.STATUS], "heartbeat_at": "soon"}),
    "a state that is an object": (ControlArea.STATUS, {**RECORDS[ControlArea.STATUS], "state": {}}),
    "a hold that expires tomorrow": (ControlArea.HOLD, {**RECORDS[ControlArea.HOLD], "expires_at": "tomorrow"}),
    "revoked holds that are text": (ControlArea.REVOKED_HOLDS, {"holders": {"someone": "then"}}),
    "a driver pid that is text": (
        ControlArea.DEPLOYMENT,
        {**RECORDS[ControlArea.DEPLOYMENT], "driver": {"kind": "local-process", "launcher_pid": "1"}},
    ),
}


@pytest.mark.parametrize("command", ["status", "doctor", "stop", "release"])
@pytest.mark.parametrize("forged", [*FORGED, "a 5,000-digit token", "nesting 100,000 deep"])
def test_the_cli_says_one_line_for_a_forged_record(
    command: str, forged: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    control.write_json(ControlArea.STATUS, RECORDS[ControlArea.STATUS])
    if forged == "a 5,000-digit token":
        control.write_bytes(ControlArea.FENCE, b'{"token": ' + b"9" * 5000 + b"}")
        control.write_bytes(ControlArea.HOLD, json.dumps({**RECORDS[ControlArea.HOLD], "expires_at": 0}).encode())
    elif forged == "nesting 100,000 deep":
        control.write_bytes(ControlArea.STATUS, b'{"x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    else:
        name, record = FORGED[forged]
        control.write_json(name, record)
    extra = ["--kill-after", "0.5", "--graceful-timeout", "0.1"] if command == "stop" else []

    code = main([command, str(tmp_path / "ck"), *extra])

    out, err = capsys.readouterr()
    assert code in (0, 1, 2) and "Traceback" not in out + err
    assert all(line.startswith(PREFIX) for line in err.splitlines()), err
    if code == 2:
        assert len(err.splitlines()) == 1 and ".async-stream/" in err, err


def test_a_token_past_any_sane_size_is_refused(tmp_path: Path) -> None:
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    control.write_json(ControlArea.FENCE, {"token": 2**70})
    with pytest.raises(ControlAreaError, match="fence.json: token .* is out of range"):
        current_token(control)


def test_a_progress_event_of_wrong_types_is_skipped_as_a_torn_line_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    control.write_json(ControlArea.STATUS, {**RECORDS[ControlArea.STATUS], "first_batch_id": 0, "last_batch_id": 3})
    event = {"deployment_id": "d1", "query_run_id": "r", "num_input_rows": 5, "duration_ms": {"triggerExecution": 90}}
    for batch, wrong in enumerate([{"batch_id": "x"}, {"duration_ms": "slow"}, {"sources": [5]}, {}]):
        control.append_progress({**event, "batch_id": batch, **wrong})

    assert [e["batch_id"] for e in control.read_progress("d1")] == [3]
    assert main(["status", str(tmp_path / "ck")]) == 0 and "latest batch    3: 5 rows" in capsys.readouterr().out


@settings(max_examples=200, deadline=None)
@given(
    field=st.sampled_from(["at", "kind", "deployment_id", "since", "error", "batch_id", "duration_ms", "sources"]),
    value=JSON,
    raw=st.sampled_from(["", "9" * 5000, "[" * 5000]),
)
def test_a_line_of_the_incidents_or_the_progress_log_never_breaks_its_reader(field: str, value: Any, raw: str) -> None:
    """Such a line is skipped as a torn one is; the others are read."""
    good = {"at": AT, "kind": "crash", "deployment_id": "d1", "since": AT}
    event = {"deployment_id": "d1", "batch_id": 7, "duration_ms": {"triggerExecution": 9}, "sources": []}
    forged = json.dumps({**good, field: value}) + "\n" + (raw and f'{{"at": {raw}}}\n')
    with tempfile.TemporaryDirectory(prefix="forged-lines-") as root:  # 200 examples: none left behind
        area = ControlArea(root + "/ck.async-stream")
        area.ensure()
        area.write_bytes(ControlArea.INCIDENTS, (json.dumps(good) + "\n" + forged).encode())
        assert read_incidents(area)[-1].kind == "crash"
        area.append_progress(event)  # the driver writes its segment; the forged line is added to it by hand
        [segment] = Path(area.path(ControlArea.PROGRESS)).iterdir()
        with segment.open("a") as fh:
            fh.write(json.dumps({**event, "batch_id": 8, field: value}) + "\n" + (raw and f'{{"batch_id": {raw}}}\n'))
        assert area.read_progress("d1")[0]["batch_id"] == 7
