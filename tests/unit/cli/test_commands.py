"""The airflow-async-stream command: what each command says and its exit code (called in-process)."""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from tests.helpers import deployed, snapshot
from tests.unit.cli_run import cli
from tests.unit.helpers import FRESH_FOR_S, fake_deployment, gapped_checkpoint

GOOD = """name: good-job
checkpoint: /tmp/ck/good-job
source: {format: rate}
sink: {format: kafka, options: {topic: out}}
async_progress: {enabled: true, checkpoint_interval_ms: 0}
"""
BAD = """name: bad-job
checkpoint: /tmp/ck/bad-job
source: {format: rate}
sink: {format: parquet, options: {path: /data/out}}
trigger: {available_now: true}
async_progress: {enabled: true, checkpoint_interval_ms: -5}
"""


def test_validate_accepts_good_files(tmp_path: Path) -> None:
    (tmp_path / "good.yaml").write_text(GOOD)
    result = cli("validate", str(tmp_path / "good.yaml"))
    assert result.returncode == 0
    assert "ok (good-job, async progress on)" in result.stdout


def test_validate_prints_one_line_per_error_with_file_and_field(tmp_path: Path) -> None:
    good, bad, worse = tmp_path / "good.yaml", tmp_path / "bad.yaml", tmp_path / "worse.yaml"
    good.write_text(GOOD)
    bad.write_text(BAD)
    worse.write_text(BAD.replace("-5", "0"))
    result = cli("validate", "-q", str(good), str(bad), str(worse))
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert (
        lines[0] == f"{bad}: async_progress.checkpoint_interval_ms: Input should be greater than or equal to 0 (got -5)"
    )
    assert {line.split(": ")[1] for line in lines[1:]} == {"trigger.available_now", "sink.format"}
    assert all(line.startswith(str(worse)) for line in lines[1:])


def test_validate_takes_folders_as_a_rollout_reads_them(tmp_path: Path) -> None:
    desired = tmp_path / "desired"
    desired.mkdir()
    (desired / "good.yaml").write_text(GOOD)
    (desired / "bad.yml").write_text(BAD.replace("bad-job", "other"))
    (desired / "_fleet.yaml").write_text("index: /shared/fleet\n")  # not a job
    (desired / ".draft.yaml").write_text("{")  # hidden: an editor's
    (desired / "README.md").write_text("# not a spec")
    (tmp_path / "empty").mkdir()
    result = cli("validate", str(desired), str(tmp_path / "empty"))
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert lines[0] == f"{tmp_path / 'empty'}: (folder): holds no job spec file (.yaml, .yml, .json)"
    assert {line.split(": ")[0] for line in lines[1:]} == {str(desired / "bad.yml"), str(desired / "good.yaml")}
    assert f"{desired / 'good.yaml'}: ok (good-job, async progress on)" in lines
    assert "Is a directory" not in result.stdout and "_fleet" not in result.stdout
    assert cli("validate", "-q", str(desired / "good.yaml"), str(desired)).returncode == 2


def test_status_counts_batches_as_its_latest_batch_line_does(tmp_path: Path) -> None:
    """The status record is written at heartbeats, the progress log at every batch: both lines agree."""
    control = fake_deployment(tmp_path)
    control.write_json("status.json", {**control.read_json("status.json"), "first_batch_id": 5})
    control.append_progress({"deployment_id": "d1", "batch_id": 8, "num_input_rows": 1, "duration_ms": {}})
    shown = dict(
        line.split(None, 1) for line in cli("status", str(tmp_path / "ck")).stdout.splitlines() if "batch" in line
    )
    assert shown["batches"].strip() == "4 run by this deployment (batch 5 to 8)"
    assert shown["latest"].split(None, 1)[1] == "8: 1 rows, triggerExecution - ms, offset management - ms"


def test_validate_of_nothing_says_nothing_is_there(tmp_path: Path) -> None:
    """A missing folder was answered '(file): cannot be read'."""
    for name in ("specs", "missing.yaml"):
        result = cli("validate", str(tmp_path / name))
        assert result.returncode == 2, result
        assert result.stdout == (
            f"{tmp_path / name}: (path): does not exist: give spec files (.yaml, .yml, .json) or folders of them\n"
        )


def test_status_by_checkpoint_for_people_and_machines(tmp_path: Path) -> None:
    fake_deployment(tmp_path)
    human = cli("status", str(tmp_path / "ck"))
    assert human.returncode == 0, human.stderr
    assert "running (live" in human.stdout
    assert "on, checkpoint interval 0 ms" in human.stdout
    assert "7: 42 rows, triggerExecution 80 ms, offset management 5 ms" in human.stdout
    machine = json.loads(cli("status", "--json", str(tmp_path / "ck")).stdout)
    assert machine["live"] is True and machine["status"]["last_batch_id"] == 7


def test_status_says_a_rehearsal_is_no_switch(tmp_path: Path) -> None:
    control = fake_deployment(tmp_path)
    control.write_json(
        "switch.json",
        {
            "request_id": "r1",
            "deployment_id": "d1",
            "phase": "done",
            "outcome": "rehearsed",
            "reason": "Spark builds and analyzes the new query",
        },
    )
    human = cli("status", str(tmp_path / "ck"))
    assert "last rehearsal" in human.stdout and "rehearsed: Spark builds and analyzes the new query" in human.stdout
    assert "switched in place" not in human.stdout


def test_status_by_job_name_uses_the_registry(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    control = fake_deployment(tmp_path)
    env = {"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "home")}
    with monkeypatch.context() as scoped:  # the session's own registry variable is back afterwards
        scoped.setenv("AIRFLOW_ASYNC_STREAM_HOME", env["AIRFLOW_ASYNC_STREAM_HOME"])
        registry.record("good-job", str(tmp_path / "ck"), control.url, "d1")
    assert "good-job" in cli("status", "good-job", env=env).stdout
    unknown = cli("status", "other-job", env=env)
    assert unknown.returncode == 2 and "no job named 'other-job'" in unknown.stderr


def test_status_of_a_stale_driver_says_it_is_gone(tmp_path: Path) -> None:
    control = fake_deployment(tmp_path)
    status = control.read_json("status.json")
    control.write_json("status.json", {**status, "heartbeat_at": time.time() - 2 * FRESH_FOR_S})
    assert "the driver is gone" in cli("status", str(tmp_path / "ck")).stdout


def test_status_of_a_failed_job_names_the_doctor_command_that_runs_as_shown(tmp_path: Path) -> None:
    control = fake_deployment(tmp_path)
    control.write_json("deployment.json", {**control.read_json("deployment.json"), "deployment_id": "d1"})
    control.write_json(
        "status.json", {**control.read_json("status.json"), "state": "failed", "error": "boom", "query_id": "q"}
    )
    shown = cli("status", str(tmp_path / "ck"))
    assert shown.returncode == 1, shown  # the exit-code table: `status` of a failed job
    [line] = [line for line in shown.stdout.splitlines() if line.startswith("diagnose")]
    command = line.split(None, 1)[1].split("  (")[0]
    assert command == f"airflow-async-stream doctor {control.url}"
    doctor = cli(*command.split()[1:])
    assert (
        doctor.returncode == 1 and "diagnosis    failed: the driver failed after its query ran: boom" in doctor.stdout
    )
    before = snapshot(Path(control.url))
    report = json.loads(cli("status", "--json", str(tmp_path / "ck")).stdout)
    assert (report["health"]["verdict"], report["health"]["reason"]) == ("crashed", "its query failed: boom")
    assert report["incidents"] == [] and snapshot(Path(control.url)) == before  # a read never writes
    check_up(control, str(tmp_path / "ck"))  # the next actor's look (a supervisor's, a stop's) records it, once
    check_up(control, str(tmp_path / "ck"))
    report = json.loads(cli("status", "--json", str(tmp_path / "ck")).stdout)
    assert [(i["kind"], i["deployment_id"], i["error"]) for i in report["incidents"]] == [("crash", "d1", "boom")]
    assert "failed: the driver failed after its query ran: boom" in report["incidents"][0]["diagnosis"]
    assert "health          crashed: its query failed: boom" in cli("status", str(tmp_path / "ck")).stdout
    listed = cli("incidents", str(tmp_path / "ck"))
    assert listed.returncode == 0 and listed.stdout.splitlines()[0].endswith("crashed: its query failed: boom")
    assert "crash  deployment d1" in listed.stdout and "    cure:" in listed.stdout and "1 incident" in listed.stdout
    assert json.loads(cli("incidents", "--json", str(tmp_path / "ck")).stdout)["incidents"] == report["incidents"]


def test_schema_is_json_schema() -> None:
    schema = json.loads(cli("schema").stdout)
    assert schema["title"] == "airflow-async-stream job spec"
    assert "async_progress" in schema["properties"]


def test_inspect_for_people(tmp_path: Path) -> None:
    result = cli("inspect", str(gapped_checkpoint(tmp_path / "ck")))
    assert result.returncode == 1  # UNSAFE: a script can branch on it
    assert cli("inspect", "--no-fail", str(tmp_path / "ck")).stdout == result.stdout
    assert "offsets/        3 batches, newest 0 4 7; gaps 1-3, 5-6; headers 4: v1, 7: v1" in result.stdout
    assert "skipped, not batch files: 1 .crc" in result.stdout
    assert "UNSAFE: offsets/6 is missing" in result.stdout and "batch 6 doesn't exist" in result.stdout
    assert f"cure            airflow-async-stream doctor {tmp_path / 'ck'}  (the cure" in result.stdout


def test_inspect_says_how_many_gaps_its_text_leaves_out(tmp_path: Path) -> None:
    """It listed the newest five gaps and dropped the rest without a word (the JSON had them all)."""
    from tests.helpers import make_checkpoint

    ids = list(range(0, 17, 2))  # 0 2 ... 16: gaps 1, 3, ..., 15
    make_checkpoint(tmp_path / "ck", ids, ids)
    result = cli("inspect", "--no-fail", str(tmp_path / "ck"))
    assert "gaps 8 (newest 5: 7, 9, 11, 13, 15; 3 older left out: --json --full lists all)" in result.stdout, result
    full = json.loads(cli("inspect", "--json", "--full", str(tmp_path / "ck")).stdout)
    assert full["offsets"]["gaps"] == [[i, i] for i in range(1, 16, 2)]


def test_inspect_json_for_machines(tmp_path: Path) -> None:
    data = json.loads(cli("inspect", "--json", str(gapped_checkpoint(tmp_path / "ck"))).stdout)
    assert (data["latest_offset"], data["latest_commit"], data["sync_restart_safe"]) == (7, 7, False)
    assert "batch 6 doesn't exist" in data["reason"]


def test_inspect_missing_checkpoint_exits_non_zero(tmp_path: Path) -> None:
    result = cli("inspect", "--json", str(tmp_path / "nope"))
    assert result.returncode == 2 and result.stdout == ""
    assert (
        result.stderr.strip()
        == f"airflow-async-stream: nothing at {tmp_path / 'nope'}: no checkpoint, and no job was deployed there"
    )


def test_status_and_inspect_accept_the_same_targets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    control = fake_deployment(tmp_path)
    checkpoint = gapped_checkpoint(tmp_path / "ck")
    spec_file = tmp_path / "good.yaml"
    spec_file.write_text(GOOD.replace("/tmp/ck/good-job", str(checkpoint)))
    env = {"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "home")}
    with monkeypatch.context() as scoped:  # the session's own registry variable is back afterwards
        scoped.setenv("AIRFLOW_ASYNC_STREAM_HOME", env["AIRFLOW_ASYNC_STREAM_HOME"])
        registry.record("good-job", str(checkpoint), control.url, "d1")
    for target in ("good-job", str(spec_file), str(checkpoint), control.url, f"file://{checkpoint}"):
        status = cli("status", target, env=env)
        assert status.returncode == 0 and "running (live" in status.stdout, (target, status)
        inspection = cli("inspect", target, env=env)
        assert inspection.returncode == 1 and "UNSAFE: offsets/6 is missing" in inspection.stdout, (target, inspection)


def test_a_target_that_names_nothing_is_an_error_never_a_verdict(tmp_path: Path) -> None:
    """A typo must not read as "never deployed" or "SAFE"."""
    not_a_checkpoint = tmp_path / "dags"
    (not_a_checkpoint / "specs").mkdir(parents=True)
    undeployed = tmp_path / "undeployed.yaml"
    undeployed.write_text(GOOD.replace("/tmp/ck/good-job", str(tmp_path / "never-ran")))
    env = {"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "home")}
    cases = {
        ("status", "/some/typo"): "nothing at /some/typo: no checkpoint, and no job was deployed there",
        ("status", str(not_a_checkpoint / "specs" / "missing.yaml")): "no spec file at ",
        ("inspect", str(not_a_checkpoint)): "is not a Spark checkpoint (it holds no metadata, offsets/ or commits/)",
        ("inspect", str(not_a_checkpoint) + ".async-stream"): "no control area at ",
        ("inspect", "clicks-async"): f"no job named 'clicks-async' was deployed from this host: not in this host's "
        f"registry {tmp_path / 'home' / 'jobs'}",
        (
            "inspect",
            str(undeployed),
        ): f"no checkpoint at {tmp_path / 'never-ran'} (from the spec file): its query never started",
        ("stop", "/some/typo"): "nothing at /some/typo",
        ("release", str(not_a_checkpoint)): "is not a Spark checkpoint",
    }
    for (command, target), message in cases.items():
        result = cli(command, target, env=env)
        assert result.returncode == 2 and result.stdout == "", (command, target, result)
        assert result.stderr.startswith("airflow-async-stream: ") and message in result.stderr, (command, result.stderr)
    # A spec file names a known job: status says it was never deployed, as an answer about that job.
    never = cli("status", str(undeployed), env=env)
    assert never.returncode == 0 and "never deployed" in never.stdout


def test_release_needs_force_for_a_live_hold(tmp_path: Path) -> None:
    from airflow_async_stream.state.hold import Holder, take

    control = fake_deployment(tmp_path)
    take(control, Holder("DAG run m/r1", "safe-disable good-job"), 3600)
    refused = cli("release", str(tmp_path / "ck"))
    assert refused.returncode == 1 and "held by DAG run m/r1 (safe-disable good-job)" in refused.stdout
    forced = cli("release", "--force", str(tmp_path / "ck"))
    assert forced.returncode == 0 and control.read_json("hold.json") is None


def test_inspect_names_a_truncated_or_garbled_file(tmp_path: Path) -> None:
    root = gapped_checkpoint(tmp_path / "ck")
    (root / "commits" / "7").write_text("v1\n")
    (root / "offsets" / "7").write_bytes(b"\xff\xfe garbage")
    result = cli("inspect", str(root))
    assert "Traceback" not in result.stdout + result.stderr
    assert "commits/7 is truncated" in result.stdout and "offsets/7 is corrupt" in result.stdout
    assert "UNSAFE" in result.stdout


def test_a_garbled_status_is_a_one_line_error(tmp_path: Path) -> None:
    root = gapped_checkpoint(tmp_path / "ck")
    control = ControlArea.for_checkpoint(str(root))
    control.ensure()
    Path(control.path("status.json")).write_text("{not json")
    result = cli("status", str(root))
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "status.json is not valid JSON" in result.stderr


def test_switch_answers_before_asking_a_driver(tmp_path: Path) -> None:
    never = cli("switch", str(tmp_path / "nothing"), "--set", "async_progress.enabled=false")
    assert never.returncode == 2 and f"nothing at {tmp_path / 'nothing'}" in never.stderr, never
    ControlArea.for_checkpoint(str(tmp_path / "nothing")).ensure()
    never = cli("switch", str(tmp_path / "nothing"), "--set", "async_progress.enabled=false")
    assert never.returncode == 2 and "no spec.json: the job was never deployed" in never.stderr, never
    control = fake_deployment(tmp_path)
    deployed(control, yaml.safe_load(GOOD) | {"checkpoint": str(tmp_path / "ck")})
    older = cli("switch", str(tmp_path / "ck"), "--set", "async_progress.checkpoint_interval_ms=500")
    assert (
        older.returncode == 1
        and "does not switch in place (an application's, which builds its query itself): redeploy" in older.stderr
    ), older
    off = cli("switch", str(tmp_path / "ck"), "--set", "async_progress.enabled=false")
    assert off.returncode == 1 and "not in place without the gate" in off.stderr, off  # what it needs, first
    invalid = cli("switch", str(tmp_path / "ck"), "--set", "async_progress.checkpoint_interval_ms=-1")
    assert invalid.returncode == 2, invalid  # bad input, with the one prefix
    assert invalid.stderr.startswith("airflow-async-stream: --set: async_progress.checkpoint_interval_ms: "), invalid
    typo = cli("switch", str(tmp_path / "ck"), "--set", "trigerr.processing_time=1")
    assert typo.returncode == 2 and typo.stderr.startswith("airflow-async-stream: --set: trigerr"), typo
    usage = cli("switch", str(tmp_path / "ck"), "--set", "async_progress.enabled")
    assert usage.returncode == 2 and "give KEY=VALUE" in usage.stderr, usage
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None


def test_status_of_a_spec_never_deployed_names_its_job_and_checkpoint(tmp_path: Path) -> None:
    """It printed `job -` and `checkpoint -` though the spec names both."""
    spec_file = tmp_path / "good.yaml"
    spec_file.write_text(GOOD.replace("/tmp/ck/good-job", str(tmp_path / "ck")))
    result = cli("status", str(spec_file))
    assert result.returncode == 0, result
    rows = dict(line.split(None, 1) for line in result.stdout.splitlines() if line.startswith(("job", "checkpoint")))
    assert rows == {"job": "good-job", "checkpoint": str(tmp_path / "ck")}
    assert "never deployed" in result.stdout
    data = json.loads(cli("status", "--json", str(spec_file)).stdout)
    assert (data["job"], data["checkpoint"], data["status"]) == ("good-job", str(tmp_path / "ck"), None)


def test_status_json_of_a_stopped_job_says_stopped_everywhere(tmp_path: Path) -> None:
    """`deployment.state` said "running" after the stop: the record is written at the deploy only."""
    control = fake_deployment(tmp_path)
    control.write_json(
        "deployment.json", {**control.read_json("deployment.json"), "deployment_id": "d1", "state": "running"}
    )
    control.write_json("status.json", {**control.read_json("status.json"), "state": "stopped"})
    data = json.loads(cli("status", "--json", str(tmp_path / "ck")).stdout)
    assert data["status"]["state"] == data["deployment"]["state"] == "stopped"
    assert data["deployment"]["launch"] == "running"  # how the deploy left it
    control.write_json("status.json", {**control.read_json("status.json"), "deployment_id": "d0"})  # an older one
    data = json.loads(cli("status", "--json", str(tmp_path / "ck")).stdout)
    assert data["deployment"]["state"] == "running"


def test_a_switch_kept_at_interval_0_says_what_to_do_next(capsys: Any) -> None:
    from airflow_async_stream.cli.change import _print_switch
    from airflow_async_stream.state.requests import SwitchAccount

    _print_switch(SwitchAccount(request_id="r1", outcome="kept_async_at_interval_0", gate="UNSAFE: batch 6"))
    out = capsys.readouterr().out
    assert out.startswith("NOT synchronous: the checkpoint is not safe for it yet")
    assert "  next               run the same switch again once two batches have committed at interval 0" in out
    _print_switch(SwitchAccount(request_id="r2"))  # no outcome yet (mypy found SwitchOutcome(None) raising here)
    assert capsys.readouterr().out.startswith("no outcome recorded yet\n")


def test_a_switch_that_changes_nothing_asks_no_driver(tmp_path: Path) -> None:
    """Setting interval 0 on a synchronous job changed nothing but paused the stream 0.75 s."""
    control = fake_deployment(tmp_path)
    sync = yaml.safe_load(GOOD) | {"checkpoint": str(tmp_path / "ck"), "async_progress": {"enabled": False}}
    for spec, setting in (
        (sync, "async_progress.checkpoint_interval_ms=0"),  # the interval of async progress that is off
        (yaml.safe_load(GOOD) | {"checkpoint": str(tmp_path / "ck")}, "async_progress.checkpoint_interval_ms=0"),
    ):
        deployed(control, spec)
        result = cli("switch", str(tmp_path / "ck"), "--set", setting)
        assert result.returncode == 0 and result.stderr == "", result
        assert result.stdout.startswith("nothing to switch: the job already runs with async progress ")
        assert result.stdout.rstrip().endswith("not asked, no pause")
        assert control.read_json(ControlArea.SWITCH_REQUEST) is None
    real = cli("switch", str(tmp_path / "ck"), "--set", "async_progress.checkpoint_interval_ms=500")
    assert real.returncode == 1 and "does not switch in place (an application's" in real.stderr  # it was asked


def test_every_error_line_carries_the_one_prefix_and_bad_input_exits_2(tmp_path: Path) -> None:
    """`switch --set trigerr...` exited 1 with a bare `field: reason` line; argparse wrote `prog: error:`."""
    (tmp_path / "bad.yaml").write_text(BAD)
    answers = {
        ("lst",): "argument command: invalid choice: 'lst'",
        ("inspect",): "inspect: the following arguments are required: JOB_OR_CHECKPOINT",
        ("report", str(tmp_path), "--since", "soon"): "--since: ",
        ("list", "--folder", str(tmp_path / "none")): "--folder ",
        ("status", "no-such-job"): "no job named 'no-such-job'",
        ("plan", str(tmp_path / "bad.yaml")): None,  # findings go to stdout, FILE: FIELD: REASON
        ("validate", str(tmp_path / "bad.yaml")): None,
    }
    for args, says in answers.items():
        result = cli(*args)
        assert result.returncode == 2, (args, result)
        if says is None:
            assert result.stderr == "" and result.stdout.startswith(str(tmp_path / "bad.yaml")), (args, result)
            continue
        lines = result.stderr.splitlines()
        assert lines and all(line.startswith("airflow-async-stream: ") for line in lines), (args, result.stderr)
        assert says in result.stderr, (args, result.stderr)


def _killed_on_another_host(tmp_path: Path, exit_recorded: bool) -> ControlArea:
    """A driver launched on worker-b that died without a final status (SIGKILL, or its host lost)."""
    control = fake_deployment(tmp_path)
    driver = {"kind": "local-process", "host": "worker-b", "launcher_pid": 4242, "exit_record": True}
    control.write_json(
        "deployment.json", {**control.read_json("deployment.json"), "deployment_id": "d1", "driver": driver}
    )  # type: ignore[dict-item]
    control.write_json(
        "status.json",
        {
            **control.read_json("status.json"),
            "host": "worker-b",
            "pid": 4243,  # type: ignore[dict-item]
            "heartbeat_at": time.time() - (1 if exit_recorded else 2 * FRESH_FOR_S),
        },
    )
    if exit_recorded:
        control.write_json("driver-exit.json", {"deployment_id": "d1", "host": "worker-b", "exited_at": time.time()})
    return control


def test_a_stop_of_a_driver_killed_on_another_host_records_it_failed_once(tmp_path: Path) -> None:
    control = _killed_on_another_host(tmp_path, exit_recorded=True)
    result = cli("stop", str(tmp_path / "ck"))
    assert (result.returncode, result.stdout.strip()) == (1, "was not running: state failed"), result
    assert control.read_status().state == "failed"  # type: ignore[union-attr]  # never "running" again
    assert [i["kind"] for i in json.loads(cli("incidents", "--json", str(tmp_path / "ck")).stdout)["incidents"]] == [
        "crash"
    ]


def test_a_stop_after_a_lost_host_names_driver_gone(tmp_path: Path) -> None:
    _killed_on_another_host(tmp_path, exit_recorded=False)
    result = cli("stop", str(tmp_path / "ck"))
    assert result.returncode == 1, result
    assert "was not running: state failed" in result.stdout
    assert "host worker-b has not confirmed yet" in result.stdout and "--driver-gone worker-b" in result.stdout
    assert cli("stop", str(tmp_path / "ck"), "--driver-gone", "worker-b").returncode == 0
    confirmed = cli("stop", str(tmp_path / "ck"))  # confirmed: a deploy goes on; the job had failed (exit 1)
    assert (confirmed.returncode, confirmed.stdout.strip()) == (1, "was not running: state failed"), confirmed


def test_help_speaks_to_users_and_prints_the_readmes_exit_codes() -> None:
    from airflow_async_stream.cli import exit_code_table

    shown = cli("--help")
    assert shown.returncode == 0
    assert ".py" not in shown.stdout and "``" not in shown.stdout  # no notes for the code's readers
    assert "exit codes:" in shown.stdout and "status: the job failed" in shown.stdout
    readme = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    assert exit_code_table() in readme


def test_status_exits_0_for_a_running_job_and_1_once_it_failed(tmp_path: Path) -> None:
    control = fake_deployment(tmp_path)
    assert cli("status", str(tmp_path / "ck")).returncode == 0
    control.write_json("status.json", {**control.read_json("status.json"), "state": "failed", "error": "boom"})
    assert cli("status", str(tmp_path / "ck")).returncode == 1
    assert cli("status", "--json", str(tmp_path / "ck")).returncode == 1


def test_a_switch_of_a_stopped_job_says_it_is_not_running_whatever_the_change(tmp_path: Path) -> None:
    """It said "the job already runs with async progress off" of a job that was stopped."""
    control = fake_deployment(tmp_path)
    sync = yaml.safe_load(GOOD) | {"checkpoint": str(tmp_path / "ck"), "async_progress": {"enabled": False}}
    deployed(control, sync)
    control.write_json("status.json", {**control.read_json("status.json"), "state": "stopped"})
    for setting in ("async_progress.enabled=false", "async_progress.checkpoint_interval_ms=500"):
        result = cli("switch", str(tmp_path / "ck"), "--set", setting)
        assert result.returncode == 1 and result.stdout == "", result
        assert "not switched: " in result.stderr and "the job is not running (stopped;" in result.stderr
        assert "already runs" not in result.stderr + result.stdout
        assert control.read_json(ControlArea.SWITCH_REQUEST) is None


def test_a_command_run_in_process_writes_its_log_lines_where_stderr_is_now() -> None:
    """The progress log and the package's log lines follow ``sys.stderr``: a caller that redirects it (each
    in-process command here) gets the lines of its own command, never a stream of an earlier one."""
    import contextlib
    import io

    from airflow_async_stream.cli import progress_log

    first, second = io.StringIO(), io.StringIO()
    with contextlib.redirect_stderr(first):
        progress_log().info("one")
    with contextlib.redirect_stderr(second):
        progress_log().info("two")
        logging.getLogger("airflow_async_stream.driver").warning("three")
    assert (first.getvalue(), second.getvalue()) == ("one\n", "two\nairflow-async-stream: three\n")
