"""In-place switches of a running driver (real PySpark, one driver through every switch): a change that needs a
new driver is refused before anything stops; a gated synchronous switch on a gapped async checkpoint keeps the
job async at interval 0 with the inspector's reason; after two committed batches the gated switch runs it
synchronously, with every batch contiguous; a driver killed between stop and start is recovered by the next
deploy, which abandons the request, with the checkpoint untouched."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import SwitchError, SwitchRefusedError
from airflow_async_stream.insight.batches import continuity_problems
from airflow_async_stream.insight.read import job_report
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import batch_ids, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import read_incidents
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome, SwitchPhase, SwitchRequest
from airflow_async_stream.switch.request import running_spec, switch_in_place
from tests.helpers import rate_noop, until
from tests.integration.helpers import checkpoint_files

pytestmark = pytest.mark.integration
HOLDER = Holder.this_process("test")
CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def _job(checkpoint: str) -> JobSpec:
    return parse_spec(
        rate_noop(
            "switch-job",
            checkpoint,
            rows=200,
            trigger={"processing_time": "100 milliseconds"},
            async_progress={"enabled": True, "checkpoint_interval_ms": 3000},
        )
    )


def _with(spec: JobSpec, **changes: dict) -> JobSpec:
    return parse_spec(deep_merge(spec.to_mapping(), changes))


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=120)


def _commits_after(checkpoint: str, batch: int) -> list[int]:
    return [b for b in batch_ids(checkpoint, "commits") if b > batch]


def test_switches_in_place_through_the_gate(airflow_db: None, checkpoint_dir: str) -> None:
    spec = _job(checkpoint_dir)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(spec, HOLDER, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    # A gap in the offset log: with a 3 s interval and 100 ms batches, most batches live only in memory.
    until(lambda: len(batch_ids(checkpoint_dir, "commits")) >= 2, 90, what="two durable async commits")
    first_run = control.read_status().query_run_id

    # 1. What needs a new driver is refused before anything stops: here, and by the driver.
    with pytest.raises(SwitchRefusedError, match=r"spark_conf\.spark\.executor\.memory: set when the driver's JVM"):
        switch_in_place(control, _with(spec, spark_conf={"spark.executor.memory": "2g"}))
    with pytest.raises(SwitchRefusedError, match=r"spark\.sql\.warehouse\.dir: Spark sets it only when the session"):
        switch_in_place(control, _with(spec, spark_conf={"spark.sql.warehouse.dir": "/tmp/elsewhere"}))
    assert control.read_switch_account().outcome == SwitchOutcome.REFUSED
    # Turning async off in place without the gate: refused here, and by the driver if asked directly.
    synchronous = _with(spec, async_progress={"enabled": False})
    with pytest.raises(SwitchRefusedError, match="async_progress.enabled: turning async progress tracking off"):
        switch_in_place(control, synchronous)
    deployment_id, token = control.read_status().deployment_id, current_token(control)
    ungated = SwitchRequest(
        request_id="ungated", deployment_id=deployment_id, spec=synchronous.to_mapping(), hold_token=token
    )
    control.write_switch_request(ungated)
    until(lambda: control.read_switch_account().request_id == "ungated", 90, what="the driver's answer")
    assert control.read_switch_account().outcome == SwitchOutcome.REFUSED
    assert "needs the gate" in control.read_switch_account().reason
    # Hand-written requests: each refused in the switch's account, the query untouched and running.
    faster = _with(spec, trigger={"processing_time": "50 milliseconds"}).to_mapping()
    valid = {"request_id": "", "deployment_id": deployment_id, "spec": faster, "hold_token": token}
    for request_id, changes, outcome, reason in [
        ("wrong-type", {"graceful_timeout_s": "abc"}, SwitchOutcome.REFUSED, "graceful_timeout_s should be a number"),
        ("no-token", {"hold_token": None}, SwitchOutcome.REFUSED, "without a hold token"),
        ("stale-token", {"hold_token": token - 1}, SwitchOutcome.REVOKED, f"token {token - 1}"),
        ("unknown-field", {"surprise": True}, SwitchOutcome.REFUSED, "unknown field 'surprise'"),
    ]:
        control.write_json(ControlArea.SWITCH_REQUEST, {**valid, "request_id": request_id, **changes})
        until(lambda: (control.read_switch_account() or SwitchAccount()).request_id == request_id, 90, what=request_id)  # noqa: B023
        account = control.read_switch_account()
        assert account.outcome == outcome and reason in account.reason, account
    control.write_json(ControlArea.STOP_REQUEST, {"deployment_id": deployment_id, "graceful_timeout_s": "abc"})
    until(lambda: control.read_json(ControlArea.STOP_REQUEST) is None, 90, what="the bad stop request refused")
    assert any("graceful_timeout_s" in (i.error or "") for i in read_incidents(control))
    status = control.read_status()
    assert (status.query_run_id, status.switches, status.state) == (first_run, 0, "running")
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None

    # 2. Synchronous through the gate on a gapped checkpoint: unsafe, so async on at interval 0, with the reason.
    unsafe = switch_in_place(control, synchronous, require_sync_safe=True, timeout_s=60)
    assert unsafe.outcome == SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0, unsafe
    assert "doesn't exist" in unsafe.reason or "missing" in unsafe.reason, unsafe.reason
    assert unsafe.after == {
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 0},
        "trigger": {"processing_time": "100 milliseconds"},
    }
    assert unsafe.phase == SwitchPhase.DONE and unsafe.pause_s is not None, unsafe
    status = control.read_status()
    assert status.query_run_id != first_run and status.switches == 1 and status.state == "running"
    assert running_spec(control).async_progress.checkpoint_interval_ms == 0
    assert control.read_deployment().async_progress == {"enabled": True, "checkpoint_interval_ms": 0}

    # 3. After two committed batches at interval 0, the gated switch runs it synchronously.
    until(lambda: len(_commits_after(checkpoint_dir, unsafe.last_batch_before)) >= 2, 90, what="two interval-0 commits")
    safe = switch_in_place(control, synchronous, require_sync_safe=True, timeout_s=60)
    assert safe.outcome == SwitchOutcome.SWITCHED and safe.phase == SwitchPhase.DONE, safe
    assert safe.after["async_progress"]["enabled"] is False
    until(lambda: len(_commits_after(checkpoint_dir, safe.first_batch_after)) >= 2, 90, what="two synchronous commits")
    stable = lambda: (control.read_json(ControlArea.STABLE) or {}).get("spec", {}).get("async_progress")  # noqa: E731
    until(
        lambda: stable() == {"enabled": False, "checkpoint_interval_ms": 3000}, 90, what="the synchronous spec stable"
    )
    inspection = inspect_checkpoint(checkpoint_dir)
    assert inspection.sync_restart_safe, inspection.reason
    offsets = batch_ids(checkpoint_dir, "offsets")
    since = [b for b in offsets if b >= unsafe.last_batch_before + 1]
    assert since == list(range(since[0], since[-1] + 1)), f"offsets not contiguous after the switch: {since}"
    events = control.read_progress(control.read_status().deployment_id)
    assert not continuity_problems(events), continuity_problems(events)
    configs = {e["query_run_id"]: e["configuration"]["async_progress"] for e in events}
    assert configs[safe.query_run_id] == {"enabled": False, "checkpoint_interval_ms": 3000}
    assert configs[unsafe.query_run_id] == {"enabled": True, "checkpoint_interval_ms": 0}
    assert configs[first_run] == {"enabled": True, "checkpoint_interval_ms": 3000}
    print(f"pauses: to interval 0 {unsafe.pause_s:.2f} s, to synchronous {safe.pause_s:.2f} s")

    # 4. A driver killed between stop and start: the next deploy abandons the request; the checkpoint is kept.
    struck = _strike_between_stop_and_start(control, checkpoint_dir, spec)
    assert control.read_json(ControlArea.SWITCH_REQUEST) is not None  # left for the next deploy

    redeployed = deploy_job(synchronous, HOLDER, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    record = control.read_switch_account()
    assert record.outcome == SwitchOutcome.ABANDONED and "at stopped" in record.reason, record
    assert control.read_json(ControlArea.SWITCH_REQUEST) is None
    after = checkpoint_files(checkpoint_dir)
    changed = sorted(name for name, digest in struck.items() if after.get(name) != digest)
    assert not changed, f"checkpoint files deleted or rewritten: {changed}"
    status = control.read_status()
    assert status.deployment_id == redeployed.deployment_id and status.switches == 0
    assert status.configuration["trigger"] == {"processing_time": "100 milliseconds"}


def _kill_when_stopped(control: ControlArea, checkpoint: str, previous_request: str, struck: dict) -> None:
    """SIGKILL the driver once a new switch says "stopped"; give up when it gets past that."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and "done" not in struck:
        record = control.read_switch_account()
        if record and record.request_id != previous_request:
            if record.phase == SwitchPhase.STOPPED:
                os.killpg(int(control.read_deployment().driver.launcher_pid), signal.SIGKILL)
                struck["files"] = checkpoint_files(checkpoint)  # the JVM died too: nothing writes them now
                return
            if record.phase != SwitchPhase.STOPPING:
                return  # too late: the next query started
        time.sleep(0.002)


def _strike_between_stop_and_start(control: ControlArea, checkpoint: str, spec: JobSpec) -> dict[str, str]:
    """Ask for trigger switches and SIGKILL the driver the moment it says its query is stopped and the next
    not yet started (tens of milliseconds: a strike that comes late is tried again); return the checkpoint's
    files as the kill left them."""
    for attempt in range(6):
        struck: dict = {}
        previous = control.read_switch_account().request_id
        killer = threading.Thread(target=_kill_when_stopped, args=(control, checkpoint, previous, struck))
        killer.start()
        try:
            switch_in_place(control, _with(spec, trigger={"processing_time": f"{200 + 100 * attempt} milliseconds"}))
        except SwitchError as exc:
            assert "ended during the switch (stopped)" in str(exc), exc
        finally:
            struck["done"] = True
            killer.join()
        if "files" in struck:
            return struck["files"]
    raise AssertionError("the driver was never struck between stop and start")


def test_an_application_switches_its_trigger_and_a_session_setting_from_the_command_line(
    airflow_db: None, checkpoint_dir: str, user_code_on_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    echo = tmp_path / "batches.jsonl"
    monkeypatch.setenv("CONF_ECHO_OUT", str(echo))  # the driver inherits it
    spec = parse_spec(
        {
            "name": "echo-app",
            "checkpoint": checkpoint_dir,
            "application": str(user_code_on_path / "conf_echo_app.py"),
            "trigger": {"processing_time": "200 milliseconds"},
            "spark_conf": {"spark.sql.shuffle.partitions": 3},
        }
    )
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(spec, HOLDER, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))

    run = _cli(
        "switch",
        checkpoint_dir,
        "--set",
        "spark_conf.spark.sql.shuffle.partitions=7",
        "--set",
        "trigger.processing_time=300 milliseconds",
    )

    assert run.returncode == 0, run.stdout + run.stderr
    record = control.read_switch_account()
    assert run.stdout.startswith("switched in place\n")
    assert "Asked deployment" in run.stderr and f"switch {record.request_id}: stopped" in run.stderr, run.stderr
    assert f"pause              {record.pause_s:.2f} s" in run.stdout
    assert "trigger processing_time=300 milliseconds" in run.stdout
    until(
        lambda: len(_commits_after(checkpoint_dir, record.first_batch_after)) >= 1, 90, what="a batch after the switch"
    )
    seen = {}
    for line in echo.read_text().splitlines():
        row = json.loads(line)
        seen[row["batch_id"]] = row["shuffle_partitions"]
    assert {p for b, p in seen.items() if b <= record.last_batch_before} == {3}, seen
    assert {p for b, p in seen.items() if b >= record.first_batch_after} == {7}, seen
    assert control.read_status().configuration["trigger"] == {"processing_time": "300 milliseconds"}
    assert running_spec(control).spark_conf["spark.sql.shuffle.partitions"] == 7
    shown = _cli("status", checkpoint_dir)
    assert f" 1 time; latest switched, pause {record.pause_s:.2f} s" in shown.stdout, shown.stdout

    # A new query Spark refuses to start (foreachBatch has no continuous mode): the previous one runs again.
    before = control.read_status()
    failed = _cli(
        "switch", checkpoint_dir, "--set", "trigger.processing_time=null", "--set", "trigger.continuous=1 second"
    )
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "could not start the new query and runs its previous configuration again" in failed.stderr
    record = control.read_switch_account()
    assert record.outcome == SwitchOutcome.FAILED and "continuous" in record.reason.lower(), record
    status = control.read_status()
    assert (
        status.state == "running" and status.query_run_id != before.query_run_id and status.switches == before.switches
    )
    assert status.configuration["trigger"] == {"processing_time": "300 milliseconds"}
    assert running_spec(control).trigger.processing_time == "300 milliseconds"
    latest = status.last_batch_id
    until(lambda: control.read_status().last_batch_id > latest, 90, what="a batch of the restarted query")


def test_a_switch_to_async_is_refused_for_a_stateful_query_before_it_stops(
    airflow_db: None, checkpoint_dir: str
) -> None:
    spec = parse_spec(
        rate_noop(
            "counts",
            checkpoint_dir,
            rows=50,
            transform={"sql": "SELECT value % 2 AS k, count(*) AS n FROM source GROUP BY value % 2"},
            sink={"format": "noop", "output_mode": "complete"},
            trigger={"processing_time": "200 milliseconds"},
            spark_conf={"spark.sql.shuffle.partitions": 2},  # a first stateful batch in 1 s, not 10
        )
    )
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(spec, HOLDER, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    run_id = control.read_status().query_run_id

    with pytest.raises(SwitchRefusedError, match="stateful operators: Aggregate"):
        switch_in_place(control, _with(spec, async_progress={"enabled": True, "checkpoint_interval_ms": 0}))
    status = control.read_status()
    assert (status.state, status.query_run_id, status.switches) == ("running", run_id, 0)
    assert running_spec(control).async_progress.enabled is False

    # Its report points at state checkpointing, from the state store's figures the driver recorded.
    until(lambda: sum("state_operators" in e for e in control.read_progress()) >= 3, 90, what="three stateful batches")
    stop_driver(control, "test")
    stateful = [e for e in control.read_progress() if "addBatch" in e["duration_ms"]]
    per_task = sorted(sum(op["commit_ms"] / op["shuffle_partitions"] for op in e["state_operators"]) for e in stateful)
    report = job_report(control, checkpoint_dir)
    state = report.to_json()["state"]
    assert state["commit_ms_per_task"] == per_task[math.ceil(len(per_task) / 2) - 1]
    assert state["rows_in_state"] == sum(op["rows_total"] for op in stateful[-1]["state_operators"]) == 2  # k: 0, 1
    assert "turn_on" not in [a["kind"] for a in report.advice]
    (advice,) = [a for a in report.advice if a["kind"] == "state_checkpointing"]
    assert "RocksDBStateStoreProvider" in advice["how"] and advice["figures"]["commit_share"] == state["commit_share"]


def test_a_switch_on_an_idle_source_returns_once_the_new_query_runs(
    airflow_db: None, checkpoint_dir: str, tmp_path: Path
) -> None:
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    spec = parse_spec(
        {
            "name": "idle-files",
            "checkpoint": checkpoint_dir,
            "source": {"format": "json", "schema": "v INT", "options": {"path": str(incoming)}},
            "sink": {"format": "noop"},
            "trigger": {"processing_time": "200 milliseconds"},
            # Spark reports an idle source every 10 s by default: every second here, to keep the test short.
            "spark_conf": {"spark.sql.streaming.noDataProgressEventInterval": "1s"},
        }
    )
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deploy_job(spec, HOLDER, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))

    started = time.monotonic()
    record = switch_in_place(control, _with(spec, trigger={"processing_time": "300 milliseconds"}), timeout_s=600)
    assert time.monotonic() - started < 30, "waited for a batch the idle source could not give"
    assert (record.outcome, record.phase, record.first_batch_after) == (SwitchOutcome.SWITCHED, "started", None)

    (incoming / "a.json").write_text('{"v": 1}\n')
    until(lambda: control.read_switch_account().phase == SwitchPhase.DONE, 90, what="the first batch after the switch")
    done = control.read_switch_account()
    assert done.first_batch_after == 0 and done.pause_s is None  # no batch before it to measure from
