"""The rollout planner and the desired-state folder: every action and its reason, no JVM."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.decision.observe import Observation
from airflow_async_stream.driver.process import identify
from airflow_async_stream.exceptions import DesiredStateError
from airflow_async_stream.rollout.desired import DesiredJob, load_desired
from airflow_async_stream.rollout.observed import ObservedJob
from airflow_async_stream.rollout.planner import PlanItem, plan_folder, plan_job, spec_digest
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.checkpoint import Inspection, LogView
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Deployment, State, Status
from tests.helpers import make_checkpoint
from tests.unit.cli_run import cli
from tests.unit.helpers import FLEET_JOB, batch_events, configuration, deployed, fleet_file, write_spec


def desired(**changes: Any) -> DesiredJob:
    return DesiredJob(parse_spec(deep_merge(FLEET_JOB, changes)), "job.yaml")


def observed(live: bool = True, confirmed: bool = True, **changes: Any) -> ObservedJob:
    spec = parse_spec(deep_merge(FLEET_JOB, changes)).to_mapping()
    status = Status(deployment_id="d1", state=State.RUNNING if live else State.STOPPED)
    seen = Observation("/ck/job.async-stream", spec, status, Deployment(deployment_id="d1"), live=live)
    return ObservedJob(
        name="job", observation=seen, stable={"deployment_id": "d1" if confirmed else "d0", "spec": spec}
    )


def seen(job: ObservedJob, state: str | None = None, sync_safe: bool | None = None, **fields: Any) -> ObservedJob:
    """``job`` observed otherwise: in ``state``, its checkpoint judged ``sync_safe``, ``fields`` of its observation."""
    observation = job.observation
    if state is not None:
        fields["status"] = replace(observation.status or Status(), state=State(state))
    if sync_safe is not None:
        why = "batch 3 is committed" if sync_safe else "offsets/2 is missing"
        fields["checkpoint"] = Inspection("/ck/job", True, LogView(True), LogView(True), sync_safe, why)
    return replace(job, observation=replace(observation, **fields))


def test_a_new_job_is_deployed() -> None:
    item = plan_job("job", desired(), None)
    assert (item.action, item.reason) == ("deploy", "a new job: never deployed")
    assert item.desired_spec and item.control_url == "/ck/job.async-stream"


def test_the_same_spec_running_and_confirmed_is_unchanged() -> None:
    item = plan_job("job", desired(), observed())
    assert (item.action, item.diff, item.needs_confirmation) == ("unchanged", {}, False)


def test_the_same_spec_not_yet_confirmed_is_checked_not_redeployed() -> None:
    item = plan_job("job", desired(), observed(confirmed=False))
    assert item.action == "unchanged" and item.needs_confirmation
    assert "not yet confirmed stable" in item.reason


def test_the_same_spec_not_running_is_restarted() -> None:
    item = plan_job("job", desired(), observed(live=False))
    assert item.action == "update" and "runs nothing (state stopped)" in item.reason


@pytest.mark.parametrize("deployed_async", [False, True], ids=["turned-off-by-hand", "stopped-async"])
def test_a_synchronous_job_whose_checkpoint_cannot_restart_so_is_cured_never_restarted(deployed_async: bool) -> None:
    sync = {"async_progress": {"enabled": False}}
    was = {"async_progress": {"enabled": deployed_async}}
    crashing = seen(observed(live=False, **was), state="failed", sync_safe=False)
    item = plan_job("job", desired(**sync), crashing)
    assert (item.action, item.how) == ("safe_disable", "restart"), item.reason
    if not deployed_async:
        assert "cannot restart synchronously (Spark would die with 'batch N doesn't exist')" in item.reason
    # Desired async: Spark restarts an async query over gaps, so a plain restart is right.
    assert plan_job("job", desired(), seen(crashing, spec=observed(**was).spec)).action == "update"


def test_the_planner_reads_a_stopped_job_s_checkpoint_verdict(tmp_path: Path) -> None:
    folder, checkpoint = tmp_path / "desired", tmp_path / "ck" / "job"
    spec = parse_spec({**FLEET_JOB, "checkpoint": str(checkpoint), "async_progress": {"enabled": False}})
    deployed(str(checkpoint), spec.to_mapping(), folder, live=False)
    fleet_file(folder, tmp_path / "index")
    write_spec(folder, "job.yaml", spec.to_mapping())
    make_checkpoint(checkpoint, [0, 4, 7], [0, 4])
    [item] = plan_folder(folder)
    assert (item.action, item.how) == ("safe_disable", "restart")


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"trigger": {"processing_time": "5 seconds"}}, "trigger.processing_time"),
        ({"spark_conf": {"spark.sql.shuffle.partitions": 4}}, "spark_conf.spark.sql.shuffle.partitions"),
        ({"async_progress": {"checkpoint_interval_ms": 0}}, "async_progress.checkpoint_interval_ms"),
        ({"source": {"options": {"rowsPerSecond": 50}}}, "source.options.rowsPerSecond"),
        ({"transform": {"sql": "SELECT value FROM source"}}, "transform.sql"),
        ({"sink": {"format": "console"}}, "sink.format"),
    ],
)
def test_changes_that_need_only_an_update(change: dict[str, Any], field: str) -> None:
    item = plan_job("job", desired(**change), observed())
    assert item.action == "update", item.reason
    assert field in item.diff and "a graceful stop and redeploy" in item.reason


def test_turning_async_on_is_an_update() -> None:
    item = plan_job("job", desired(), observed(async_progress={"enabled": False}))
    assert item.action == "update" and "async progress tracking turned on" in item.reason


def test_turning_async_off_goes_through_safe_disable() -> None:
    item = plan_job("job", desired(async_progress={"enabled": False}), observed())
    assert item.action == "safe_disable"
    assert item.diff["async_progress.enabled"] == {"from": True, "to": False}


TUNED = {
    "async_progress": {"enabled": True, "checkpoint_interval_ms": 300, "auto": ["enabled", "checkpoint_interval_ms"]}
}


def test_a_rollout_keeps_what_the_tuner_set_for_a_delegated_field() -> None:
    item = plan_job(
        "job", desired(async_progress={"enabled": "auto", "checkpoint_interval_ms": "auto"}), observed(**TUNED)
    )
    assert item.action == "unchanged", item.reason
    assert item.desired_spec["async_progress"]["checkpoint_interval_ms"] == 300


def test_a_rollout_sets_a_pinned_field_over_the_tuner() -> None:
    pinned_interval = {"async_progress": {"enabled": "auto", "checkpoint_interval_ms": 2000}}
    item = plan_job("job", desired(**pinned_interval), observed(**TUNED))
    assert item.action == "update", item.reason
    assert item.diff["async_progress.checkpoint_interval_ms"] == {"from": 300, "to": 2000}
    off = plan_job("job", desired(async_progress={"enabled": False}), observed(**TUNED))
    assert off.action == "safe_disable" and off.diff["async_progress.enabled"] == {"from": True, "to": False}


def test_a_tuned_on_job_whose_file_now_promises_exactly_once_goes_off_through_the_migration() -> None:
    item = plan_job("job", desired(async_progress={"enabled": "auto"}, delivery="exactly_once"), observed(**TUNED))
    assert item.action == "safe_disable", item.reason
    assert item.desired_spec["async_progress"]["enabled"] is False


@pytest.mark.parametrize(
    ("deployed", "wanted", "needle"),
    [
        ({}, {"checkpoint": "/ck/elsewhere"}, "the checkpoint location changed"),
        ({}, {"source": {"format": "kafka", "options": {"subscribe": "t"}}}, "the source changed (rate -> kafka)"),
        (
            {"source": {"format": "kafka", "options": {"subscribe": "a"}}},
            {"source": {"format": "kafka", "options": {"subscribe": "b"}}},
            "source option subscribe changed",
        ),
        (
            {"async_progress": {"enabled": False}},
            {"async_progress": {"enabled": False}, "sink": {"format": "parquet", "options": {"path": "/o"}}},
            "the sink changed from noop to parquet",
        ),
        (
            {"async_progress": {"enabled": False}, "sink": {"format": "parquet", "options": {"path": "/a"}}},
            {"async_progress": {"enabled": False}, "sink": {"format": "parquet", "options": {"path": "/b"}}},
            "output directory changed",
        ),
        (
            {
                "async_progress": {"enabled": False},
                "stateful": True,
                "transform": {"sql": "SELECT count(*) FROM source"},
            },
            {
                "async_progress": {"enabled": False},
                "stateful": True,
                "transform": {"sql": "SELECT max(value) FROM source"},
            },
            "stateful operations",
        ),
    ],
)
def test_changes_spark_cannot_restart_from_are_refused(deployed: dict, wanted: dict, needle: str) -> None:
    item = plan_job("job", desired(**wanted), observed(**deployed))
    assert item.action == "refuse" and needle in item.reason, item.reason
    assert item.reason.endswith("the job is left as it runs")
    assert item.control_url == "/ck/job.async-stream", "a refused job is reported where it runs"


def test_a_file_sink_may_become_kafka() -> None:
    deployed = {"async_progress": {"enabled": False}, "sink": {"format": "parquet", "options": {"path": "/a"}}}
    wanted = {"async_progress": {"enabled": False}, "sink": {"format": "kafka", "options": {"topic": "t"}}}
    assert plan_job("job", desired(**wanted), observed(**deployed)).action == "update"


def test_a_job_gone_from_the_folder_is_retired_if_it_runs() -> None:
    assert plan_job("job", None, observed()).action == "retire"
    stopped = plan_job("job", None, observed(live=False))
    assert stopped.action == "unchanged" and "not running" in stopped.reason


# -- the folder ---------------------------------------------------------------------------------------


def test_the_folder_is_validated_as_a_whole(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    write_spec(folder, "a.yaml", {**FLEET_JOB, "name": "a", "checkpoint": "/ck/a"})
    write_spec(folder, "a-again.yaml", {**FLEET_JOB, "name": "a", "checkpoint": "/ck/a2"})
    write_spec(folder, "b.yaml", {**FLEET_JOB, "name": "b", "checkpoint": "/ck/a2/"})
    write_spec(
        folder,
        "c.yml",
        {**FLEET_JOB, "name": "c", "checkpoint": "/ck/c", "async_progress": {"checkpoint_interval_ms": -1}},
    )
    (folder / "notes.txt").write_text("not a spec")
    (folder / ".hidden.yaml").write_text("::")

    with pytest.raises(DesiredStateError) as caught:
        load_desired(folder)
    problems = {(file, field) for file, field, _ in caught.value.problems}
    assert problems == {
        ("a.yaml", "name"),
        ("b.yaml", "checkpoint"),
        ("c.yml", "async_progress.checkpoint_interval_ms"),
    }
    assert "is also the job of a-again.yaml" in str(caught.value)


def test_one_checkpoint_under_two_spellings_or_inside_another_job_is_refused_naming_both(tmp_path: Path) -> None:
    folder, ck = tmp_path / "desired", tmp_path / "ck"
    (ck / "real").mkdir(parents=True)
    (ck / "link").symlink_to(ck / "real")
    write_spec(folder, "a.yaml", {**FLEET_JOB, "name": "a", "checkpoint": str(ck / "real")})
    write_spec(folder, "b.yaml", {**FLEET_JOB, "name": "b", "checkpoint": str(ck / "link")})  # a symlink to a's
    write_spec(folder, "c.yaml", {**FLEET_JOB, "name": "c", "checkpoint": str(ck / "c")})
    write_spec(folder, "d.yaml", {**FLEET_JOB, "name": "d", "checkpoint": str(ck / "c" / "inner")})
    write_spec(folder, "e.yaml", {**FLEET_JOB, "name": "e", "checkpoint": str(ck / "cc" / "e")})  # f's holds it
    write_spec(folder, "f.yaml", {**FLEET_JOB, "name": "f", "checkpoint": str(ck / "cc")})  # c's sibling, e's parent

    with pytest.raises(DesiredStateError) as caught:
        load_desired(folder)

    said = {(file, field): reason for file, field, reason in caught.value.problems}
    assert set(said) == {("b.yaml", "checkpoint"), ("d.yaml", "checkpoint"), ("f.yaml", "checkpoint")}, said
    assert said["b.yaml", "checkpoint"] == f"{ck / 'link'} is {ck / 'real'}, the checkpoint of a.yaml"
    assert said["d.yaml", "checkpoint"] == f"{ck / 'c' / 'inner'} is inside {ck / 'c'}, the checkpoint of c.yaml"
    assert said["f.yaml", "checkpoint"] == f"{ck / 'cc'} holds {ck / 'cc' / 'e'}, the checkpoint of e.yaml"
    # Inside a control area is refused by the spec itself (spec/paths.py), whatever the folder holds.
    write_spec(folder, "g.yaml", {**FLEET_JOB, "name": "g", "checkpoint": str(ck / "c.async-stream" / "g")})
    with pytest.raises(DesiredStateError) as again:
        load_desired(folder)
    assert "must not be in or be a job's control area (c.async-stream)" in str(again.value)


def test_a_plan_lists_every_problem_of_the_folder_at_once(tmp_path: Path) -> None:
    """A duplicate name, a bad spec and a bad fleet file: one run shows all three, by file and field."""
    folder = tmp_path / "desired"
    write_spec(folder, "a.yaml", {**FLEET_JOB, "name": "a", "checkpoint": "/ck/a"})
    write_spec(folder, "a-again.yaml", {**FLEET_JOB, "name": "a", "checkpoint": "/ck/a2"})
    write_spec(
        folder, "c.yaml", {**FLEET_JOB, "name": "c", "checkpoint": "/ck/c", "async_progress": {"enabled": "maybe"}}
    )
    (folder / "_fleet.yaml").write_text("index: relative/index\nowner: team-a\n")

    with pytest.raises(DesiredStateError) as caught:
        plan_folder(folder)
    problems = {(file, field) for file, field, _ in caught.value.problems}
    assert problems == {
        ("a.yaml", "name"),
        ("c.yaml", "async_progress.enabled"),
        ("_fleet.yaml", "owner"),
        ("_fleet.yaml", "index"),
    }, caught.value.problems
    assert "a.yaml: name: 'a' is also the job of a-again.yaml" in str(caught.value)
    assert "_fleet.yaml: index: 'relative/index' is relative" in str(caught.value)


def test_a_file_asking_for_what_async_cannot_run_with_turns_async_off(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    write_spec(folder, "a.yaml", {**FLEET_JOB, "name": "a", "trigger": {"available_now": True}})
    job = load_desired(folder)["a"]
    assert job.spec.async_progress.enabled is False and job.spec.trigger.available_now
    assert job.async_forced_off and job.async_forced_off[0].startswith("trigger.available_now")

    item = plan_job("a", job, observed())
    assert item.action == "safe_disable" and "because the file asks for" in item.reason


def test_plan_folder_reads_control_areas_and_the_fleet_index(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A fleet a rollout deployed: its removed and moved jobs are found through the fleet index."""
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "home"))
    folder, ck = tmp_path / "desired", tmp_path / "ck"
    index = fleet_file(folder, tmp_path / "index")
    specs = {n: parse_spec({**FLEET_JOB, "name": n, "checkpoint": str(ck / n)}).to_mapping() for n in "abcdef"}
    for name in "bcdf":
        deployed(str(ck / name), specs[name], folder)
    deployed(str(ck / "e"), specs["e"], folder)  # e's file is removed below: retire
    specs["g"] = parse_spec({**FLEET_JOB, "name": "g", "checkpoint": str(ck / "g")}).to_mapping()
    deployed(str(ck / "g"), specs["g"], folder, switches=False)  # an application's driver
    write_spec(folder, "g.yaml", deep_merge(specs["g"], {"trigger": {"processing_time": "2 seconds"}}))
    specs["h"] = parse_spec({**FLEET_JOB, "name": "h", "checkpoint": str(ck / "h")}).to_mapping()
    deployed(str(ck / "h"), specs["h"], folder)
    write_spec(folder, "h.yaml", deep_merge(specs["h"], {"spark_conf": {"spark.executor.memory": "2g"}}))
    for name in "bcdefgh":
        index.record_active(name, str(ck / name) + ".async-stream", "run-1")
    moved = {**specs["f"], "checkpoint": str(ck / "f-new")}
    write_spec(folder, "a.yaml", specs["a"])
    write_spec(folder, "b.yaml", specs["b"])
    write_spec(folder, "c.yaml", deep_merge(specs["c"], {"trigger": {"processing_time": "2 seconds"}}))
    write_spec(folder, "d.yaml", deep_merge(specs["d"], {"async_progress": {"enabled": False}}))
    write_spec(folder, "f.yaml", moved)

    items = {item.job: item for item in plan_folder(folder)}

    assert {job: (item.action, item.how) for job, item in items.items()} == {
        "a": ("deploy", None),
        "b": ("unchanged", None),
        "c": ("update", "in_place"),
        "d": ("safe_disable", "in_place"),
        "e": ("retire", None),
        "f": ("refuse", None),
        "g": ("update", "restart"),
        "h": ("update", "restart"),
    }
    assert items["c"].reason == "changed: trigger.processing_time; switched in place"
    assert "an application's" in str(items["g"].how_reason)
    assert "needs a new driver: spark_conf.spark.executor.memory" in str(items["h"].how_reason)


def test_cli_plan_for_people_and_machines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {**os.environ, "AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "home")}
    folder = tmp_path / "desired"
    fleet_file(folder, tmp_path / "index")
    spec = parse_spec({**FLEET_JOB, "checkpoint": str(tmp_path / "ck" / "job")}).to_mapping()
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", env["AIRFLOW_ASYNC_STREAM_HOME"])
    deployed(spec["checkpoint"], spec, folder)
    write_spec(folder, "job.yaml", deep_merge(spec, {"async_progress": {"enabled": False}}))

    people = cli("plan", str(folder), env=env)
    assert people.returncode == 0, people.stderr
    assert "job                      safe_disable  async progress tracking is turned off" in people.stdout
    assert "how: in place (the running driver switches its query in place)" in people.stdout
    assert "async_progress.enabled: True -> False" in people.stdout
    assert people.stdout.splitlines()[-1] == "1 job: 1 safe_disable"

    machines = json.loads(cli("plan", "--json", str(folder), env=env).stdout)
    assert machines == [
        {
            "job": "job",
            "action": "safe_disable",
            "reason": "async progress tracking is turned off: through the safe-disable migration, switched in place",
            "diff": {
                "async_progress.enabled": {"from": True, "to": False},
            },
            "how": "in_place",
            "how_reason": "the running driver switches its query in place",
            "held_back": False,
            "advice": [],
            "analysis": None,  # `plan --analyze` fills it
        }
    ]

    write_spec(folder, "broken.yaml", {"name": "Bad Name"})
    bad = cli("plan", str(folder), env=env)
    assert bad.returncode == 2 and f"{folder}/broken.yaml: name:" in bad.stdout


def test_a_change_that_failed_is_not_retried_until_its_spec_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "home"))
    folder = tmp_path / "desired"
    fleet_file(folder, tmp_path / "index")
    spec = parse_spec({**FLEET_JOB, "checkpoint": str(tmp_path / "ck" / "job")}).to_mapping()
    deployed(spec["checkpoint"], spec, folder)
    wanted = parse_spec(deep_merge(spec, {"trigger": {"processing_time": "2 seconds"}})).to_mapping()
    write_spec(folder, "job.yaml", wanted)
    [fresh] = plan_folder(folder)
    assert (fresh.action, fresh.held_back, fresh.failed_before) == ("update", False, None)

    # The rollout that tried it recorded the failure (apply.py writes failed_spec with the outcome).
    failure = {
        "job": "job",
        "action": "update",
        "outcome": "failed",
        "error": "the new query did not start",
        "failed_spec": spec_digest(fresh.desired_spec),
        "run_id": "scheduled__2026-11-24T10:00",
        "finished_at": 1795514405.0,
        "not_taken": True,
    }
    ControlArea.for_checkpoint(spec["checkpoint"]).write_json("rollout.json", failure)

    [held] = plan_folder(folder)
    assert (held.action, held.held_back) == ("update", True)
    assert held.reason.startswith("changed: trigger.processing_time; switched in place — failed at ")
    assert "scheduled__2026-11-24T10:00 2026-11-24 10:00:05 UTC: the new query did not start" in held.reason
    assert "not retried until the spec changes" in held.reason
    env = {**os.environ, "AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path / "home")}
    shown = cli("plan", str(folder), env=env)
    assert "not retried until the spec changes" in shown.stdout
    assert shown.stdout.splitlines()[-1] == "1 job: 1 update (1 not retried: failed before)"

    [retried] = plan_folder(folder, retry_failed=True)
    assert (retried.action, retried.held_back) == ("update", False)
    assert "retried as asked: it failed at scheduled__2026-11-24T10:00" in retried.reason
    asked = cli("plan", "--json", "--retry-failed", str(folder), env=env)
    assert [row["held_back"] for row in json.loads(asked.stdout)] == [False]

    # Another spec in the file: planned as any change.
    write_spec(folder, "job.yaml", deep_merge(wanted, {"trigger": {"processing_time": "3 seconds"}}))
    [changed] = plan_folder(folder)
    assert (changed.action, changed.held_back, changed.failed_before) == ("update", False, None)


def test_a_held_back_item_is_not_applied_and_its_failure_record_stays(tmp_path: Path) -> None:
    from airflow_async_stream.driver.deploy import DeploySettings
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.exceptions import RolloutError
    from airflow_async_stream.factories.rollout import summarize
    from airflow_async_stream.rollout.apply import ApplySettings, apply_item
    from airflow_async_stream.state.hold import Holder

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    control.write_json("rollout.json", {"outcome": "failed", "run_id": "r1", "failed_spec": "abc"})
    item = PlanItem(
        "job",
        "update",
        "changed: trigger — failed at r1 ...",
        control_url=control.url,
        desired_spec=FLEET_JOB,
        held_back=True,
    )
    settings = ApplySettings(folder=str(tmp_path / "desired"), deploy=DeploySettings(launcher=LocalLauncher()))
    with pytest.raises(RolloutError, match="job: update not retried: changed: trigger — failed at r1"):
        apply_item(item, Holder.this_process("test"), settings)
    assert control.read_json("rollout.json") == {"outcome": "failed", "run_id": "r1", "failed_spec": "abc"}
    assert control.read_json("hold.json") is None  # the job was not even held
    [row] = summarize([item.to_json()], "r2")
    assert row["outcome"] == "not retried"


def test_a_submitted_deployment_not_yet_reporting_counts_as_running(tmp_path: Path) -> None:
    """A run that died right after spark-submit: the driver still starts, so the next plan must not redeploy."""
    from airflow_async_stream.rollout.observed import read_job

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    control.write_json("status.json", {"deployment_id": "old", "state": "stopped", "heartbeat_at": time.time()})
    driver = {"kind": "local-process", "host": socket.gethostname(), "launcher_pid": os.getpid()}
    control.write_json("deployment.json", {"deployment_id": "new", "driver": driver, "deployed_at": time.time()})
    assert read_job("job", control).live

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    control.write_json(
        "deployment.json", {"deployment_id": "new", "driver": {**driver, "launcher_pid": int(gone.stdout)}}
    )
    assert not read_job("job", control).live

    # A record with the process's identity: live only while that pid still is that process.
    control.write_json(
        "deployment.json",
        {"deployment_id": "new", "driver": {"kind": "local-process", **identify(os.getpid()).to_json()}},
    )
    assert read_job("job", control).live
    reused = {"kind": "local-process", **identify(os.getpid()).to_json(), "launcher_started": 1}
    control.write_json("deployment.json", {"deployment_id": "new", "driver": reused})
    assert not read_job("job", control).live


def test_after_an_in_place_switch_the_new_spec_is_confirmed_afresh() -> None:
    """The deployment stays across a switch: its stable record counts only once it names the spec it runs."""
    switched = observed(trigger={"processing_time": "2 seconds"})
    old_stable = {"deployment_id": "d1", "spec": observed().spec}
    item = plan_job("job", desired(trigger={"processing_time": "2 seconds"}), replace(switched, stable=old_stable))
    assert item.action == "unchanged" and item.needs_confirmation
    assert plan_job("job", desired(trigger={"processing_time": "2 seconds"}), switched).needs_confirmation is False


def test_a_plan_that_turns_async_on_or_changes_the_interval_carries_the_jobs_advice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "home"))
    folder = tmp_path / "desired"
    fleet_file(folder, tmp_path / "index")
    spec = parse_spec(
        deep_merge(FLEET_JOB, {"checkpoint": str(tmp_path / "ck" / "job"), "async_progress": {"enabled": False}})
    ).to_mapping()
    deployed(spec["checkpoint"], spec, folder)
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    for event in batch_events([200.0] * 20, [120.0] * 20, conf=configuration(False, trigger="1 second")):
        control.append_progress(event)
    write_spec(folder, "job.yaml", deep_merge(spec, {"async_progress": {"enabled": True}}))
    (item,) = plan_folder(folder)
    assert item.action == "update" and [a["kind"] for a in item.advice] == ["turn_on"]
    assert item.advice[0]["figures"]["expected_saving_ms"] == 120.0
    people = cli("plan", str(folder))
    assert "advice: turn async progress tracking on: offset management is 60% of a synchronous batch" in people.stdout
    # a trigger change is not what the advice speaks to
    write_spec(folder, "job.yaml", deep_merge(spec, {"trigger": {"processing_time": "2 seconds"}}))
    assert plan_folder(folder)[0].advice == []


KAFKA = {
    "source": {"format": "kafka", "options": {"subscribe": "clicks"}},
    "transform": {"sql": "SELECT key, value FROM source"},
    "sink": {"format": "kafka", "options": {"topic": "alerts"}, "output_mode": "update"},
}
REAL_TIME = {**KAFKA, "trigger": {"processing_time": None, "real_time": "5 seconds"}}  # None: not merged in


def test_a_job_with_async_on_moves_to_real_time_mode_in_two_changes(tmp_path: Path) -> None:
    """No Spark here: real-time mode reads only Kafka, whose connector jar this machine cannot reach."""
    folder = tmp_path / "desired"
    write_spec(folder, "job.yaml", deep_merge(FLEET_JOB, {**REAL_TIME, "name": "job"}))  # async on, as before
    job = load_desired(folder)["job"]
    assert job.spec.trigger.real_time and not job.spec.async_progress.enabled
    assert job.async_forced_off[0].startswith("trigger.real_time")

    first = plan_job("job", job, seen(observed(**KAFKA), switchable=True))
    assert first.action == "safe_disable" and first.follow_up and "next rollout run" in first.reason
    assert first.desired_spec["trigger"] == {"processing_time": "1 second"}  # the cure runs micro-batches
    assert first.desired_spec["async_progress"]["enabled"] is False
    assert "trigger.real_time" not in first.diff and first.how == "in_place"  # the cure itself switches in place

    after_the_cure = seen(observed(**KAFKA, async_progress={"enabled": False}), switchable=True)
    second = plan_job("job", job, after_the_cure)
    assert second.action == "update" and second.desired_spec["trigger"] == {"real_time": "5 seconds"}
    assert second.how == "restart" and "trigger.real_time" in second.how_reason
    assert second.follow_up is None


def test_a_synchronous_job_enters_real_time_mode_by_a_restart_never_in_place() -> None:
    item = plan_job(
        "job",
        desired(**REAL_TIME, async_progress={"enabled": False}),
        seen(observed(**KAFKA, async_progress={"enabled": False}), switchable=True),
    )
    assert item.action == "update" and item.how == "restart"
    assert "only by a restart" in item.how_reason


def test_plan_names_what_is_wrong_with_what_it_was_given(tmp_path: Path) -> None:
    """A spec file given for the folder was answered '(folder): does not exist or is not a folder'."""
    folder = tmp_path / "desired"
    write_spec(folder, "job.yaml", {**FLEET_JOB, "checkpoint": str(tmp_path / "ck" / "job")})
    as_file = cli("plan", str(folder / "job.yaml"))
    assert as_file.returncode == 2
    assert as_file.stdout == (
        f"{folder / 'job.yaml'}: is a file, not a folder: give the folder of spec files (one per job) it sits in, "
        f"{folder}\n"
    )
    missing = cli("plan", str(tmp_path / "nothing"))
    assert missing.returncode == 2 and missing.stdout == f"{tmp_path / 'nothing'}: does not exist\n"


def test_plan_lists_a_duplicate_name_and_a_bad_fleet_file_together(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    write_spec(folder, "a.yaml", {**FLEET_JOB, "checkpoint": str(tmp_path / "ck" / "a")})
    write_spec(folder, "b.yaml", {**FLEET_JOB, "checkpoint": str(tmp_path / "ck" / "b")})
    (folder / "_fleet.yaml").write_text("index: relative/index\n")
    result = cli("plan", str(folder))
    assert result.returncode == 2
    lines = result.stdout.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{folder / 'b.yaml'}: name: '{FLEET_JOB['name']}' is also the job of a.yaml")
    assert lines[1].startswith(f"{folder / '_fleet.yaml'}: index: 'relative/index' is relative")


def test_a_job_whose_driver_exit_is_recorded_is_observed_not_live_at_once(tmp_path: Path) -> None:
    """Another host's driver died: its heartbeat still looks fresh, but its host recorded the exit."""
    from airflow_async_stream.rollout.observed import read_job

    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    control.write_json(
        "status.json",
        {
            "deployment_id": "d1",
            "state": "running",
            "heartbeat_at": time.time(),
            "host": "worker-b",
            "pid": 7,
            "configuration": {},
        },
    )
    assert read_job("job", control).live
    control.write_json("driver-exit.json", {"deployment_id": "d1", "host": "worker-b", "exited_at": time.time()})
    observed = read_job("job", control)
    assert not observed.live and not observed.observation.switchable


def _stopped(kind: str, at: float = 1000.0) -> Any:
    from airflow_async_stream.state.stopped import Stopped

    return Stopped(at=at, kind=kind, by="ann@host", reason="stop", deployment_id="d1")


def test_a_job_a_person_stopped_is_not_restarted_by_a_rollout() -> None:
    stopped = replace(observed(live=False), stopped=_stopped("person"))
    item = plan_job("job", desired(), stopped)
    assert item.action == "unchanged", item.reason
    assert item.reason.startswith("stopped by a person (ann@host) at 1970-01-01 00:16:40 UTC; resume with ")
    assert "`airflow-async-stream resume job`, or write state: running in its file" in item.reason
    # Not even a change of its spec, nor the cure of async turned off, starts it.
    assert plan_job("job", desired(trigger={"processing_time": "2 seconds"}), stopped).action == "unchanged"
    assert plan_job("job", desired(async_progress={"enabled": False}), stopped).action == "unchanged"


def test_a_file_written_to_say_running_after_a_persons_stop_resumes_the_job() -> None:
    stopped = replace(observed(live=False), stopped=_stopped("person", at=1000.0))
    said_before = replace(desired(state="running"), modified_at=999.0)
    assert plan_job("job", said_before, stopped).action == "unchanged"
    said_after = replace(desired(state="running"), modified_at=1001.0)
    item = plan_job("job", said_after, stopped)
    assert (item.action, item.how, item.diff) == ("update", "restart", {}), item.reason
    assert item.reason.startswith("resumed: runs nothing (state stopped)")


def test_state_suspended_stops_a_running_job_and_keeps_it_stopped() -> None:
    item = plan_job("job", desired(state="suspended"), observed())
    assert (item.action, item.diff) == ("suspend", {}), item.reason  # the state is no change of what runs
    assert item.reason.startswith("its file says state: suspended: a graceful stop; its checkpoint")
    crashed = seen(observed(live=False), state="failed")
    assert plan_job("job", desired(state="suspended"), crashed).reason.startswith(
        "its file says state: suspended: recorded (no driver runs)"
    )
    suspended = replace(observed(live=False), stopped=_stopped("file"))
    item = plan_job("job", desired(state="suspended"), suspended)
    assert item.action == "unchanged" and "suspended by its file at" in item.reason


def test_state_running_again_resumes_a_suspended_job() -> None:
    suspended = replace(observed(live=False, state="suspended"), stopped=_stopped("file"))
    item = plan_job("job", desired(), suspended)
    assert (item.action, item.diff) == ("update", {}), item.reason
    assert item.reason.startswith("resumed: runs nothing (state stopped): redeploy the desired spec")


def test_a_job_the_supervisor_gave_up_on_is_not_redeployed_as_it_was() -> None:
    looping = replace(seen(observed(live=False), state="failed"), crash_looping_at=1000.0)
    item = plan_job("job", desired(), looping)
    assert item.action == "unchanged" and item.reason.startswith("crash_looping: the supervisor gave up restarting it")
    assert "`airflow-async-stream resume job`" in item.reason
    fixed = plan_job("job", desired(trigger={"processing_time": "2 seconds"}), looping)
    assert fixed.action == "update"  # a changed spec is a person's fix: it is tried


def test_a_new_job_whose_file_says_suspended_is_not_deployed() -> None:
    item = plan_job("job", desired(state="suspended"), None)
    assert (item.action, item.reason) == ("unchanged", "never deployed, and its file says state: suspended")
