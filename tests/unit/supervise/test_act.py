"""What the supervisor does about one job, from its records (no Spark: the paths that launch nothing). A
restart itself is tested on real Spark under a real scheduler (tests/integration/test_supervisor.py)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, take
from airflow_async_stream.state.incidents import Kind, read_incidents
from airflow_async_stream.supervise.act import Outcome, SuperviseSettings, supervise_job
from airflow_async_stream.supervise.record import Supervision, read_supervision
from tests.helpers import deployed, rate_noop
from tests.unit.cli_run import cli


@pytest.fixture
def crashed(tmp_path: Path) -> ControlArea:
    """A job whose driver failed after it ran batches, with its spec's restart policy."""
    spec = rate_noop("job", str(tmp_path / "ck"), restart={"max_restarts": 2, "backoff": "1 second"})
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    deployed(control, spec, "d3")
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d3", "deployed_at": time.time() - 100})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d3",
            "state": "failed",
            "batches": 4,
            "last_batch_id": 9,
            "error": "boom at batch 10",
            "finished_at": time.time() - 50,
            "heartbeat_at": time.time() - 50,
        },
    )
    return control


def _supervise(control: ControlArea, run: str = "") -> Outcome:
    return supervise_job(control, Holder.this_process("supervisor"), SuperviseSettings(), run=run)


def test_a_job_past_max_restarts_is_declared_crash_looping_once(crashed: ControlArea) -> None:
    ledger.write(
        crashed,
        ledger.SUPERVISION,
        Supervision(
            restarts=[
                {"at": time.time() - 200, "answered": "d1", "deployment_id": "d2"},
                {"at": time.time() - 100, "answered": "d2", "deployment_id": "d3"},
            ]
        ).to_json(),
    )
    first = _supervise(crashed)
    assert (first.act, first.needs_person, first.verdict) == ("crash_looping", True, "crashed")
    assert first.reason.startswith("crashed after 2 restarts within 1 hour (restart.max_restarts 2): crash_looping")
    assert read_supervision(crashed).crash_looping == "d3"
    loops = [i for i in read_incidents(crashed) if i.kind == Kind.CRASH_LOOP]
    assert len(loops) == 1 and loops[0].action == "none: a person must look"
    assert "airflow-async-stream resume " in (loops[0].cure or "")
    shown = cli("status", crashed.url).stdout
    [line] = [line for line in shown.splitlines() if line.startswith("supervisor ")]
    assert "crash_looping since " in line and line.endswith("no more restarts until a person resumes it"), line
    again = _supervise(crashed)
    assert (again.act, again.needs_person, again.alert) == ("nothing", True, "crash_looping")  # still, until resumed
    assert len([i for i in read_incidents(crashed) if i.kind == Kind.CRASH_LOOP]) == 1


def test_a_held_job_is_skipped_and_nothing_is_written(crashed: ControlArea) -> None:
    ledger.write(
        crashed,
        ledger.SUPERVISION,
        Supervision(restarts=[{"at": time.time() - 10, "answered": f"d{i}"} for i in range(2)]).to_json(),
    )
    take(crashed, Holder("DAG run migrate/r1", "a migration", dag_id="migrate", run_id="r1"), 600)
    outcome = _supervise(crashed)
    assert outcome.act == "held" and outcome.reason.endswith("looked at again when the hold ends")
    assert "a migration" in outcome.reason
    assert read_supervision(crashed).crash_looping is None


def test_a_crash_within_its_backoff_waits(crashed: ControlArea) -> None:
    crashed.write_json(
        ControlArea.STATUS,
        {**crashed.read_json(ControlArea.STATUS), "finished_at": time.time(), "heartbeat_at": time.time()},
    )
    deployed(crashed, {**json.loads(crashed.read_bytes(ControlArea.SPEC)), "restart": {"backoff": "1 minute"}}, "d3")
    outcome = _supervise(crashed)
    assert outcome.act == "wait" and 50 < outcome.wait_s <= 60
    assert [i.kind for i in read_incidents(crashed)] == [Kind.CRASH]  # the look recorded the crash, once


def test_a_forged_policy_is_refused_naming_its_field(crashed: ControlArea) -> None:
    """The policy comes from the spec a restart would run, as the Airflow side kept it: a spec.json rewritten to
    allow endless restarts is refused, recorded, and nothing is restarted."""
    spec = json.loads(crashed.read_bytes(ControlArea.SPEC))
    forged = {**spec, "restart": {**spec["restart"], "max_restarts": 50, "within": "1 day"}}
    crashed.write_bytes(ControlArea.SPEC, json.dumps(forged).encode())
    outcome = _supervise(crashed)
    assert (outcome.act, outcome.alert) == ("nothing", "untrusted_spec"), outcome
    assert "differs from the last one (deployment d3) in restart.max_restarts, restart.within;" in outcome.reason
    [incident] = [i for i in read_incidents(crashed) if i.kind == Kind.UNTRUSTED_SPEC]
    assert "restart.max_restarts" in (incident.error or "") and read_supervision(crashed).restarts == []


def test_a_crash_loop_is_said_once_by_the_run_that_found_it_and_again_by_its_retries(crashed: ControlArea) -> None:
    ledger.write(
        crashed,
        ledger.SUPERVISION,
        Supervision(
            restarts=[{"at": time.time() - 100, "answered": f"d{i}", "deployment_id": f"d{i + 1}"} for i in (1, 2)]
        ).to_json(),
    )
    first = _supervise(crashed, run="supervise/r1")
    assert first.said == first.line() and first.recovered is None
    assert first.said.startswith("job: crash_looping (crashed): crashed after 2 restarts within 1 hour")
    assert (
        "diagnosis: " in first.said
        and "cure: find the cause in the driver log and `airflow-async-stream doctor job`" in first.said
    )
    assert _supervise(crashed, run="supervise/r1").said == first.said  # a retry of that run: it fails again
    assert _supervise(crashed, run="supervise/r2").said is None  # a later run (an event again, a run by hand)
    assert _supervise(crashed, run="supervise/r3").said is None

    # A person fixed and redeployed it: the next look says the recovery, once.
    crashed.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d4", "deployed_at": time.time() - 5})
    crashed.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d4",
            "state": "running",
            "batches": 3,
            "last_batch_id": 12,
            "heartbeat_at": time.time(),
            "last_progress_at": time.time(),
        },
    )
    up = _supervise(crashed, run="supervise/r4")
    assert up.said is None and up.recovered == f"job: recovered: {up.verdict} as deployment d4 (was crash_looping)"
    assert _supervise(crashed, run="supervise/r4").recovered == up.recovered  # its retry
    assert _supervise(crashed, run="supervise/r5").recovered is None


def test_a_restart_never_made_is_said_once_and_its_reason_kept(crashed: ControlArea) -> None:
    ledger.write(
        crashed,
        ledger.SUPERVISION,
        Supervision(
            restarts=[{"at": time.time() - 10, "answered": "d3", "error": "spark-submit: no such file"}]
        ).to_json(),
    )
    outcome = _supervise(crashed, run="supervise/r1")
    assert (outcome.act, outcome.alert) == ("nothing", "restart_failed")
    assert outcome.said and "its restart failed: spark-submit: no such file" in outcome.said
    assert "cure: " in outcome.said and _supervise(crashed, run="supervise/r2").said is None


def test_a_job_left_down_by_policy_never_is_said_once_a_persons_stop_never(crashed: ControlArea) -> None:
    spec = json.loads(crashed.read_bytes(ControlArea.SPEC))
    deployed(crashed, {**spec, "restart": {"policy": "never"}}, "d3")
    outcome = _supervise(crashed, run="supervise/r1")
    assert (outcome.act, outcome.alert) == ("leave", "left_down") and outcome.said
    assert _supervise(crashed, run="supervise/r2").said is None


def test_the_line_said_is_one_line_whatever_spark_wrote() -> None:
    outcome = Outcome(
        "/ck.async-stream",
        "crashed",
        "crash_looping",
        "crashed: [X] boom\n=== Streaming Query ===\nId",
        "the transform raised\nat line 2",
        job="job",
        cure="resume it\n(twice)",
        alert="crash_looping",
    )
    assert (
        outcome.line()
        == "job: crash_looping (crashed): crashed: [X] boom; diagnosis: the transform raised; cure: resume it"
    )


def test_a_forged_history_in_the_control_area_never_ends_a_crash_loop(crashed: ControlArea) -> None:
    """The supervisor counts the restarts it recorded itself (its ledger), not the control area's copy."""
    ledger.write(
        crashed,
        ledger.SUPERVISION,
        Supervision(
            restarts=[{"at": time.time() - 100, "answered": f"d{i}", "deployment_id": f"d{i + 1}"} for i in (1, 2)]
        ).to_json(),
    )
    crashed.write_json(ControlArea.SUPERVISION, Supervision(resumed_at=time.time() + 3600).to_json())
    outcome = _supervise(crashed)
    assert (outcome.act, outcome.alert) == ("crash_looping", "crash_looping"), outcome
    assert Supervision.from_json(crashed.read_json(ControlArea.SUPERVISION)).crash_looping == "d3"  # copied back


def test_an_edited_stop_record_never_restarts_a_job_a_person_stopped(crashed: ControlArea) -> None:
    """A person's stop is the Airflow side's record; a status rewritten to failed, a stopped.json naming another
    deployment and a forged deployment record do not undo it."""
    from airflow_async_stream.state.stopped import record_unheld_stop

    assert record_unheld_stop(crashed, "d3", "ann@h", "maintenance") is None
    crashed.write_json(ControlArea.STOPPED, {"at": 1.0, "by": "x", "deployment_id": "d0"})
    crashed.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d9", "deployed_at": time.time() - 10})
    crashed.write_json(ControlArea.STATUS, {**crashed.read_json(ControlArea.STATUS), "deployment_id": "d9"})
    outcome = _supervise(crashed)
    assert outcome.act == "leave" and "stopped by a person (ann@h)" in outcome.reason, outcome
    ledger.write(crashed, ledger.DEPLOYED, {"deployment_id": "d9"})  # what a deploy from the Airflow side writes
    assert _supervise(crashed).act != "leave"


def test_a_forged_exit_time_never_pushes_the_restart_later(crashed: ControlArea) -> None:
    """Rewriting the status (or an exit record) at every look moves the crash's time; the backoff still runs
    from when the supervisor first saw the deployment down."""
    from airflow_async_stream.insight.checkup import check_up
    from airflow_async_stream.supervise.policy import Response, case_for, respond

    deployed(crashed, {**json.loads(crashed.read_bytes(ControlArea.SPEC)), "restart": {"backoff": "1 minute"}}, "d3")
    assert ledger.down_since(crashed, "d3", time.time() - 120) < time.time() - 100  # first seen two minutes ago
    crashed.write_json(
        ControlArea.STATUS,
        {**crashed.read_json(ControlArea.STATUS), "finished_at": time.time(), "heartbeat_at": time.time()},
    )
    health = check_up(crashed, crashed.url).health
    assert health.since is not None and health.since > time.time() - 5  # what the forged record says
    assert respond(case_for(crashed, health, "d3"), time.time()).act == Response.RESTART
