"""Which changes switch in place, how ``--set`` edits a spec, and what a caller is told before anything is asked."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from types import SimpleNamespace

import pytest

from airflow_async_stream.cli.change import assign, parse_assignment
from airflow_async_stream.decision.in_place import configuration_of, in_place_refusals, runtime_conf_changes
from airflow_async_stream.exceptions import ControlAreaError, NotSwitchableError, SwitchRefusedError
from airflow_async_stream.insight.batches import idle_between, ran_a_batch
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Status, now
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome, SwitchPhase, SwitchRequest
from airflow_async_stream.switch.account import phases_passed
from airflow_async_stream.switch.request import switch_in_place
from tests.helpers import deployed, rate_noop

BASE = rate_noop(
    "clicks",
    "/data/ck/clicks",
    rows=10,
    trigger={"processing_time": "1 second"},
    async_progress={"enabled": True, "checkpoint_interval_ms": 3000},
    spark_conf={"spark.sql.shuffle.partitions": 4, "spark.executor.memory": "1g"},
)


def spec(**changes: object) -> JobSpec:
    return parse_spec(deep_merge(BASE, changes))


def test_async_options_trigger_and_runtime_sql_conf_switch_in_place() -> None:
    new = spec(
        async_progress={"enabled": False},
        trigger={"processing_time": "5 seconds"},
        spark_conf={"spark.sql.shuffle.partitions": 8, "spark.sql.ansi.enabled": True},
    )
    assert in_place_refusals(spec(), new, require_sync_safe=True) == []
    assert runtime_conf_changes(spec(), new) == (
        {"spark.sql.shuffle.partitions": "8", "spark.sql.ansi.enabled": "true"},
        [],
    )
    fewer = parse_spec({**BASE, "spark_conf": {"spark.executor.memory": "1g"}})
    assert runtime_conf_changes(spec(), fewer) == ({}, ["spark.sql.shuffle.partitions"])


def test_turning_async_off_in_place_needs_the_gate() -> None:
    off = spec(async_progress={"enabled": False})
    (problem,) = in_place_refusals(spec(), off)
    assert problem[0] == "async_progress.enabled" and "--require-sync-safe" in problem[1]
    assert in_place_refusals(spec(), off, require_sync_safe=True) == []
    assert in_place_refusals(off, spec()) == []  # turning it on needs no gate


def test_what_the_driver_was_started_with_is_refused_field_by_field() -> None:
    new = spec(
        spark_conf={"spark.executor.memory": "2g", "spark.jars.packages": "a:b:1"},
        sink={"options": {"path": "/x"}},
        logs={"spark_level": "INFO"},
    )
    problems = dict(in_place_refusals(spec(), new))
    assert set(problems) == {"spark_conf.spark.executor.memory", "spark_conf.spark.jars.packages", "sink", "logs"}
    assert "JVM starts" in problems["spark_conf.spark.executor.memory"]
    assert "another job" in dict(in_place_refusals(spec(), spec(checkpoint="/data/ck/other")))["checkpoint"]


def test_configuration_is_what_a_switch_may_change() -> None:
    assert configuration_of(spec()) == {
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 3000},
        "trigger": {"processing_time": "1 second"},
    }


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("async_progress.enabled=false", ("async_progress.enabled", False)),
        ("async_progress.checkpoint_interval_ms=0", ("async_progress.checkpoint_interval_ms", 0)),
        ("trigger.processing_time=2 seconds", ("trigger.processing_time", "2 seconds")),
        ("spark_conf.spark.sql.shuffle.partitions= 16", ("spark_conf.spark.sql.shuffle.partitions", 16)),
    ],
)
def test_assignments_read_values_as_yaml(text: str, expected: tuple) -> None:
    assert parse_assignment(text) == expected


@pytest.mark.parametrize("text", ["async_progress.enabled", "=1", "a..b=1", "x=[unclosed"])
def test_bad_assignments_say_what_to_give(text: str) -> None:
    with pytest.raises(ValueError, match=r"--set"):
        parse_assignment(text)


def test_assign_keeps_spark_conf_keys_whole_and_leaves_the_input_alone() -> None:
    changed = assign(BASE, "spark_conf.spark.sql.shuffle.partitions", 16)
    assert changed["spark_conf"] == {"spark.sql.shuffle.partitions": 16, "spark.executor.memory": "1g"}
    assert BASE["spark_conf"]["spark.sql.shuffle.partitions"] == 4
    assert assign(BASE, "trigger.processing_time", "2 seconds")["trigger"] == {"processing_time": "2 seconds"}
    with pytest.raises(ValueError, match="name is not a section"):
        assign(BASE, "name.first", "x")


def test_idle_between_is_end_of_one_batch_to_start_of_the_next() -> None:
    before = {"timestamp": "2026-11-23T20:00:00.000Z", "duration_ms": {"triggerExecution": 250}}
    after = {"timestamp": "2026-11-23T20:00:01.000Z", "duration_ms": {"triggerExecution": 100}}
    assert idle_between(before, after) == 0.75


def test_a_trigger_that_found_no_data_is_no_batch() -> None:
    assert not ran_a_batch({"batch_id": 0, "duration_ms": {"latestOffset": 3, "triggerExecution": 3}})
    assert ran_a_batch({"batch_id": 0, "duration_ms": {"addBatch": 40, "triggerExecution": 90}})


def test_a_request_without_its_deployment_is_an_error_naming_the_file() -> None:
    with pytest.raises(ControlAreaError, match="names no deployment_id"):
        SwitchRequest.from_json({"request_id": "r", "spec": {"name": "x"}}, "switch-request.json")


def _control_with(tmp_path, status: Status | None) -> ControlArea:  # type: ignore[no-untyped-def]
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    deployed(control, spec(checkpoint=str(tmp_path / "ck")))
    if status:
        control.write_status(status)
    return control


def _running(**changes: object) -> Status:
    return Status(
        deployment_id="d1",
        state="running",
        host=socket.gethostname(),
        pid=os.getpid(),
        heartbeat_at=now(),
        configuration={"async_progress": {}, "trigger": {}},
    ).but(**changes)


def test_switch_refuses_before_asking_when_nothing_can_switch(tmp_path) -> None:  # type: ignore[no-untyped-def]
    target = spec(checkpoint=str(tmp_path / "ck"), async_progress={"enabled": False})
    with pytest.raises(NotSwitchableError, match="not running \\(never deployed"):
        switch_in_place(_control_with(tmp_path, None), target)
    with pytest.raises(NotSwitchableError, match="not running \\(stopped"):
        switch_in_place(_control_with(tmp_path, _running(state="stopped")), target)
    with pytest.raises(NotSwitchableError, match="does not switch in place \\(an application's"):
        switch_in_place(_control_with(tmp_path, _running(configuration=None)), target)
    control = _control_with(tmp_path, _running())
    with pytest.raises(SwitchRefusedError, match=r"spark_conf\.spark\.executor\.memory"):
        switch_in_place(control, spec(checkpoint=str(tmp_path / "ck"), spark_conf={"spark.executor.memory": "4g"}))
    other_source = spec(
        checkpoint=str(tmp_path / "ck"), source={"format": "rate-micro-batch", "options": {"rowsPerBatch": 5}}
    )
    with pytest.raises(
        SwitchRefusedError, match=r"cannot switch in place: the source changed \(rate -> rate-micro-batch\)"
    ):
        switch_in_place(control, other_source)  # Spark would not restart it at all: decision/change.py says so
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None
    assert control.read_json(ControlArea.HOLD) is None


def _request(deployment_id: str = "d-old") -> dict:
    return SwitchRequest(request_id="r1", deployment_id=deployment_id, spec=BASE, requested_at=now()).to_json()


def test_a_request_left_by_an_earlier_driver_is_abandoned_never_applied(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from airflow_async_stream.runtime.switch_request import abandon_stale_request

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    control.write_json(ControlArea.SWITCH_REQUEST, _request())
    control.write_switch_account(
        SwitchAccount(request_id="r1", deployment_id="d-old", phase=SwitchPhase.STOPPED, before={"x": 1})
    )
    abandon_stale_request(control, "d-new")
    record = control.read_switch_account()
    assert record.outcome == SwitchOutcome.ABANDONED and record.settled
    assert "deployment d-old ended before the switch was done (at stopped)" in record.reason
    assert "d-new started from its own spec" in record.reason and record.before == {"x": 1}
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None

    control.write_json(ControlArea.SWITCH_REQUEST, {**_request(), "request_id": "r2", "graceful_timeout_s": "abc"})
    abandon_stale_request(control, "d-new")  # unreadable: refused where its asker looks, and removed
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None
    record = control.read_switch_account()
    assert (record.request_id, record.outcome) == (
        "r2",
        SwitchOutcome.REFUSED,
    ) and "graceful_timeout_s" in record.reason


def test_an_asker_answered_may_ask_again_at_once_and_its_next_request_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A refusal wrote the account, then removed the request: an asker that read the account and wrote its next
    request in between lost it (seen in CI: a switch never answered). Each answer now removes the request first.
    The asker here answers inside the account's write, the narrowest window there is."""
    from airflow_async_stream.runtime.switch import InPlaceSwitch
    from airflow_async_stream.runtime.switch_request import abandon_stale_request, refuse_unreadable
    from airflow_async_stream.spec.secret_options import Redactor

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    write_account = control.write_switch_account
    following = {**_request("d-new"), "request_id": "next"}

    def asker_answered(record: SwitchAccount, *args: object) -> None:
        write_account(record, *args)  # type: ignore[arg-type]
        control.write_json(ControlArea.SWITCH_REQUEST, following)  # the asker's next request, at once

    monkeypatch.setattr(control, "write_switch_account", asker_answered)
    for answer in (
        lambda: refuse_unreadable(control, ControlArea.SWITCH_REQUEST, "unreadable", "d-new"),
        lambda: abandon_stale_request(control, "d-new"),
        lambda: InPlaceSwitch(SimpleNamespace(control=control, redact=Redactor()), None, None, None)._settle(  # type: ignore[arg-type]
            None, SwitchAccount(request_id="r1", deployment_id="d-new"), SwitchOutcome.REFUSED, "refused"
        ),
    ):
        control.write_json(ControlArea.SWITCH_REQUEST, _request())  # d-old's: stale for d-new, and "unreadable"
        answer()
        assert control.read_json(ControlArea.SWITCH_REQUEST) == following


def test_the_governor_takes_only_requests_for_its_own_deployment(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from airflow_async_stream.runtime.governor import Governor

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    governor = Governor(control, "d-new", "clicks")
    control.write_json(ControlArea.SWITCH_REQUEST, _request("d-old"))
    assert governor._switch_request() is None
    control.write_json(ControlArea.SWITCH_REQUEST, _request("d-new"))
    assert governor._switch_request().request_id == "r1"
    control.write_json(ControlArea.SWITCH_REQUEST, {"request_id": "r2"})  # no deployment, no spec
    assert governor._switch_request() is None
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None


def test_a_phase_the_poll_missed_is_still_reported_in_order() -> None:
    """The CLI prints every phase the switch went through, also when the driver passed one between two polls."""
    stopping = SwitchAccount(request_id="r", phase=SwitchPhase.STOPPING)
    done = stopping.but(phase=SwitchPhase.DONE, stopped_at=1.0, query_run_id="run-2", outcome=SwitchOutcome.SWITCHED)
    refused = SwitchAccount(request_id="r", phase=SwitchPhase.DONE, outcome=SwitchOutcome.REFUSED)
    failed = done.but(query_run_id=None, outcome=SwitchOutcome.FAILED)

    assert phases_passed(stopping) == ["stopping"]
    assert phases_passed(done) == ["stopping", "stopped", "started", "done"]
    assert phases_passed(refused) == ["done"]
    assert phases_passed(failed) == ["stopping", "stopped", "done"]
    assert phases_passed(stopping.but(phase="from-a-newer-driver")) == ["from-a-newer-driver"]


def test_the_migration_switches_in_place_only_where_the_running_driver_can(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Each switch of the safe-disable migration says which way it goes and why, before anything is asked."""
    from airflow_async_stream.decision.needs import How
    from airflow_async_stream.migrations.safe_disable_steps import SafeDisable

    job = spec(checkpoint=str(tmp_path / "ck"))

    def path(status: Status | None, **kwargs: object) -> tuple[str, str]:
        migration = SafeDisable(job, **kwargs)  # type: ignore[arg-type]
        _control_with(tmp_path, status)
        return migration.how(migration.synchronous_spec(), require_sync_safe=True)

    assert path(_running()) == (How.IN_PLACE, "the running driver switches in place")
    assert path(_running(), in_place=False) == (How.RESTART, "the migration asks for restarts (in_place=False)")
    assert path(_running(configuration=None))[0] == How.RESTART
    assert "an application's" in path(_running(configuration=None))[1]
    assert "not running (stopped" in path(_running(state="stopped"))[1]
    heavier = path(_running(), sync_overrides={"spark_conf": {"spark.executor.memory": "4g"}})
    assert heavier[0] == How.RESTART and "spark_conf.spark.executor.memory" in heavier[1]
    assert path(_running(), sync_overrides={"spark_conf": {"spark.sql.shuffle.partitions": 9}})[0] == How.IN_PLACE


def test_a_query_moves_into_or_out_of_real_time_mode_only_by_a_restart() -> None:
    kafka = {
        "source": {"format": "kafka", "options": {"subscribe": "t"}},
        "sink": {"format": "kafka", "output_mode": "update"},
        "async_progress": {"enabled": False},
    }
    micro, real = spec(**kafka), spec(**kafka, trigger={"processing_time": None, "real_time": "5 seconds"})
    for current, new in ((micro, real), (real, micro)):
        assert dict(in_place_refusals(current, new))["trigger.real_time"].endswith("only by a restart: redeploy")
    assert in_place_refusals(real, spec(**kafka, trigger={"processing_time": None, "real_time": "10 seconds"})) == []


@pytest.mark.parametrize("outcome", [SwitchOutcome.FAILED, SwitchOutcome.REFUSED])
def test_a_switch_the_driver_failed_or_refused_is_an_incident(tmp_path, outcome: SwitchOutcome) -> None:  # type: ignore[no-untyped-def]
    import threading

    from airflow_async_stream.exceptions import SwitchError
    from airflow_async_stream.state.incidents import read_incidents
    from tests.helpers import until

    control = _control_with(tmp_path, _running())

    def driver() -> None:  # a driver's answer to the request: Spark rejected the new query
        request = until(lambda: control.read_switch_request(), timeout_s=10)
        account = SwitchAccount(
            request_id=request.request_id, deployment_id="d1", outcome=outcome, reason="Spark said no"
        )
        control.write_switch_account(account)

    answering = threading.Thread(target=driver)
    answering.start()
    with pytest.raises(SwitchError):
        switch_in_place(
            control, spec(checkpoint=str(tmp_path / "ck"), trigger={"processing_time": "2 seconds"}), timeout_s=10
        )
    answering.join()
    [incident] = read_incidents(control)
    kind = "change_failed" if outcome == SwitchOutcome.FAILED else "change_refused"
    assert (incident.kind, incident.deployment_id, incident.error) == (kind, "d1", "Spark said no")


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("&x [*x, *x]", "uses the YAML alias"),
        ("[" * 5000 + "]" * 5000, "nests deeper than 32 levels"),
        ("9" * 5000, "not valid YAML"),
        ("9" * 30, "past 64 bits"),
        (".nan", "must be a finite number"),
    ],
)
def test_a_set_value_is_bounded_as_a_spec_file_is(value: str, said: str) -> None:
    with pytest.raises(ValueError, match=r"^--set .*" + said) as caught:
        parse_assignment(f"async_progress.checkpoint_interval_ms={value}")
    assert len(str(caught.value)) < 500
