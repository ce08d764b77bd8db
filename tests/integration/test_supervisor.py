"""The supervisor as Airflow really runs it: its health watcher in a real triggerer (an AssetWatcher: dag.test()
runs none), its DAG on a real scheduler and dag-processor (LocalExecutor, SQLite), real Spark drivers.

- a driver SIGKILLed -> running again and committing batches: one restart, one incident;
- a person's stop -> not restarted (nor planned by a rollout), and ``resume`` brings the job back;
- the triggerer SIGKILLed, then the job's driver -> the new triggerer's watcher acts, once;
- a migration holding a down job -> the supervisor leaves it until the hold ends, then restarts it;
- ``state: suspended`` then ``running`` in its file -> stopped, left stopped, started again;
- a transform that fails after a few batches every time -> crash_looping after max_restarts, one incident,
  the DAG's failure notifier called once with one line (the run retried); fixed and deployed by a person ->
  its recovery said once;
- a synchronous job crashed over async gaps -> cured through the safe-disable path, never a synchronous start
  into ``batch N doesn't exist``.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.rollout.actions import ApplySettings
from airflow_async_stream.rollout.apply import apply_item
from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state import issued
from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, release, take
from airflow_async_stream.state.incidents import Kind, read_incidents
from airflow_async_stream.state.records import Deployment
from airflow_async_stream.state.stopped import BY_FILE, BY_PERSON, stopped_on_purpose
from airflow_async_stream.supervise.record import read_supervision
from airflow_async_stream.supervise.watch import read_seen
from tests.helpers import rate_noop
from tests.integration.airflow_stack import AirflowStack
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
SUPERVISED = CHECKPOINT_ROOT / f"supervised-{uuid.uuid4().hex[:6]}"
DAG_ID = "supervise"
NOTES = SUPERVISED.parent / f"{SUPERVISED.name}-notes.jsonl"


class StatsdListener:
    """A StatsD server stand-in on 127.0.0.1: every metric line Airflow's StatsD backend sends."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        self.lines: list[str] = []
        threading.Thread(target=self._receive, daemon=True).start()

    def _receive(self) -> None:
        while True:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            self.lines.extend(data.decode().splitlines())

    def newest(self, name: str) -> tuple[float, str] | None:
        """The newest value and type sent for ``name`` (``(1.0, "g")``), or None."""
        sent = [line.split(":", 1)[1] for line in list(self.lines) if line.split(":", 1)[0] == name]
        return (float(sent[-1].split("|")[0]), sent[-1].split("|")[1]) if sent else None


@pytest.fixture(scope="module")
def statsd() -> Iterator[StatsdListener]:
    listener = StatsdListener()
    yield listener
    listener.sock.close()


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory, statsd: StatsdListener) -> Iterator[AirflowStack]:
    SUPERVISED.mkdir()
    deployment = AirflowStack(
        tmp_path_factory.mktemp("supervisor") / "airflow-home",
        metrics__statsd_on="True",
        metrics__statsd_host="127.0.0.1",
        metrics__statsd_port=str(statsd.port),
        core__parallelism="4",
        triggerer__job_heartbeat_sec="1",
        triggerer__triggerer_health_check_threshold="5",
        scheduler__scheduler_heartbeat_sec="1",
        dag_processor__refresh_interval="5",
    )
    (deployment.dags / f"{DAG_ID}.py").write_text(
        textwrap.dedent(f"""
        import json
        from datetime import timedelta

        from airflow.sdk.bases.notifier import BaseNotifier
        from airflow_async_stream.factories import supervise_dag

        class Note(BaseNotifier):
            \"\"\"A notifier as a user's would be (Slack, e-mail): here each call is a line of a file.\"\"\"

            def __init__(self, what):
                super().__init__()
                self.what = what

            def notify(self, context):
                ti = context["ti"]
                said = str(context.get("exception") or "") or ti.xcom_pull(task_ids="recovered")
                with open({str(NOTES)!r}, "a") as fh:
                    fh.write(json.dumps({{"what": self.what, "run_id": ti.run_id, "try": ti.try_number,
                                         "said": said}}) + "\\n")

        supervise_dag(checkpoint_folders=[{str(SUPERVISED)!r}], dag_id={DAG_ID!r}, poll_s=1,
                      startup_timeout_s=180, wait_timeout_s=150, on_alert=Note("alert"), on_recovery=Note("recovery"),
                      default_args={{"retries": 1, "retry_delay": timedelta(seconds=1)}})
        """)
    )
    try:
        deployment.airflow("db", "migrate")
        for component in ("api-server", "scheduler", "dag-processor"):
            deployment.start(component, component)
        deployment.start("triggerer-1", "triggerer")
        deployment.await_(
            lambda: deployment.query("SELECT 1 FROM serialized_dag WHERE dag_id = ?", DAG_ID),
            "the supervisor DAG parsed",
            120,
        )
        yield deployment
    finally:
        deployment.close()


def _spec(name: str, **changes: Any) -> dict[str, Any]:
    """rate -> noop at 5 rows a second, a restart after 1 s (2 s at most), ``changes`` merged in."""
    base = {
        "source": {"options": {"rowsPerSecond": 5}},
        "trigger": {"processing_time": "500 milliseconds"},
        "restart": {"backoff": "1 second", "max_backoff": "2 seconds"},
    }
    return rate_noop(name, str(SUPERVISED / name), **deep_merge(base, changes))


def _deploy(spec: dict[str, Any]) -> tuple[ControlArea, Deployment]:
    settings = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)
    record = deploy_job(parse_spec(spec), Holder.this_process("the test's deploy"), settings)
    return ControlArea.for_checkpoint(spec["checkpoint"]), record


def _kill(control: ControlArea) -> str:
    """SIGKILL the job's driver (no final status); the deployment killed."""
    deployment = control.read_deployment()
    assert deployment is not None and deployment.driver
    os.killpg(os.getpgid(int(deployment.driver.launcher_pid)), signal.SIGKILL)
    return deployment.deployment_id


def _runs(stack: AirflowStack) -> list[tuple[str, str]]:
    return stack.query("SELECT run_id, state FROM dag_run WHERE dag_id = ? ORDER BY id", DAG_ID)


def _settled(stack: AirflowStack) -> list[tuple[str, str]]:
    """Await every supervisor run so far ending; their states."""
    return stack.await_(
        lambda: (runs := _runs(stack)) and all(s in ("success", "failed") for _, s in runs) and runs,
        "the supervisor's runs ending",
        300,
    )


def _restarted(stack: AirflowStack, control: ControlArea, count: int) -> dict[str, Any]:
    """Await the supervisor's ``count``-th restart of the job running and committing batches; that restart."""

    def running() -> dict[str, Any] | None:
        restarts = read_supervision(control).restarts
        status = control.read_status()
        if len(restarts) < count or not restarts[-1].get("deployment_id") or status is None:
            return None
        mine = status.deployment_id == restarts[-1]["deployment_id"] and status.state == "running"
        return restarts[-1] if mine and status.batches >= 2 else None

    return stack.await_(running, f"restart {count} running and committing", 300)


def _notes() -> list[dict[str, Any]]:
    """What the DAG's notifiers were called with, in order."""
    return [json.loads(line) for line in NOTES.read_text().splitlines()] if NOTES.exists() else []


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, timeout=400)


def test_a_killed_driver_is_restarted_a_persons_stop_is_not(
    stack: AirflowStack, statsd: StatsdListener, tmp_path: Path
) -> None:
    spec = _spec("kill-me")
    control, first = _deploy(spec)
    killed = _kill(control)
    restart = _restarted(stack, control, 1)
    assert restart["answered"] == killed and restart["how"] == "redeploy" and restart["verdict"] == "crashed"
    assert [i.kind for i in read_incidents(control)] == [Kind.CRASH]
    # The watcher's figures, through Airflow's StatsD backend: the job's name is part of each name (no tags).
    metric = "airflow.async_stream.job.kill-me."
    batch_figures = (
        "seconds_since_last_batch",
        "batch_latency_p50_ms",
        "input_rows_per_second",
        "processed_rows_per_second",
    )

    def figures() -> bool:
        up, restarts = statsd.newest(metric + "up"), statsd.newest(metric + "restarts_in_window")
        return up == (1, "g") and restarts == (1, "g") and all(statsd.newest(metric + f) for f in batch_figures)

    stack.await_(figures, "the restarted job's figures over StatsD", 60)
    assert statsd.newest(metric + "health") in ((0, "g"), (1, "g"))  # healthy or idle
    assert [line for line in statsd.lines if line.startswith(metric + "incidents")] == [
        metric + "incidents.crashed:1|c"
    ]
    assert all(statsd.newest(metric + f)[0] >= 0 for f in batch_figures)  # type: ignore[index]

    # A person's stop: the watcher sees it, nothing restarts it, and a rollout's plan leaves it stopped.
    stopped = _cli("stop", spec["checkpoint"])
    assert stopped.returncode == 0, stopped
    assert stopped_on_purpose(control).kind == BY_PERSON  # type: ignore[union-attr]
    stack.await_(
        lambda: (read_seen(control) or None) and read_seen(control).condition == "quiet:stopped",  # type: ignore[union-attr]
        "the watcher seeing the stop",
        60,
    )
    _settled(stack)
    assert len(read_supervision(control).restarts) == 1 and control.read_status().state == "stopped"  # type: ignore[union-attr]
    assert control.read_status().deployment_id == restart["deployment_id"]  # type: ignore[union-attr]
    desired = tmp_path / "desired"
    desired.mkdir()
    (desired / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    (desired / "kill-me.yaml").write_text(yaml.safe_dump(spec))
    plan = _cli("plan", str(desired))
    assert "kill-me                  unchanged     stopped by a person (" in plan.stdout, plan
    assert "resume with `airflow-async-stream resume kill-me`" in plan.stdout

    resumed = _cli("resume", spec["checkpoint"])
    assert resumed.returncode == 0 and resumed.stdout.startswith("resumed: deployment "), resumed
    assert stopped_on_purpose(control) is None and control.read_status().state == "running"  # type: ignore[union-attr]

    # The triggerer dies, then the driver: the new triggerer's watcher finds it down and the job restarts once.
    stack.kill("triggerer-1")
    _kill(control)
    stack.start("triggerer-2", "triggerer")
    _restarted(stack, control, 2)
    assert len(read_supervision(control).restarts) == 2 and {s for _, s in _settled(stack)} == {"success"}

    # A migration holds the job when its driver dies: the supervisor leaves it until the hold ends.
    migration = Holder("DAG run migrate/r1", "safe-disable", dag_id="migrate", run_id="r1")
    take(control, migration, 600)
    runs = _settled(stack)
    held_down = _kill(control)
    stack.await_(
        lambda: len(_runs(stack)) > len(runs) and _settled(stack), "the supervisor's run for the held job", 120
    )
    assert read_seen(control).condition == f"crashed:{held_down}:held"  # type: ignore[union-attr]
    assert control.read_deployment().deployment_id == held_down and len(read_supervision(control).restarts) == 2  # type: ignore[union-attr]
    release(control, migration)
    assert _restarted(stack, control, 3)["answered"] == held_down
    assert first.deployment_id != held_down and len([i for i in read_incidents(control) if i.kind == Kind.CRASH]) == 3

    # Its file says state: suspended: a rollout stops it, the supervisor leaves it; state: running starts it again.
    settings = ApplySettings(str(desired), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180), 150)

    def roll_out(**changes: Any) -> str:
        (desired / "kill-me.yaml").write_text(yaml.safe_dump({**spec, **changes}))
        [item] = plan_folder(desired, adopt=True)
        apply_item(item, Holder.this_process("a rollout"), settings)
        return item.action

    assert roll_out(state="suspended") == "suspend"
    suspended = control.read_status()
    assert suspended.state == "stopped" and stopped_on_purpose(control).kind == BY_FILE  # type: ignore[union-attr]
    stack.await_(lambda: read_seen(control).condition == "quiet:stopped", "the watcher seeing the suspend", 60)  # type: ignore[union-attr]
    _settled(stack)
    assert len(read_supervision(control).restarts) == 3 and control.read_status() == suspended
    assert roll_out(state="suspended") == "unchanged"
    assert roll_out(state="running") == "update"
    assert control.read_status().state == "running" and stopped_on_purpose(control) is None  # type: ignore[union-attr]
    assert json.loads(control.read_bytes(ControlArea.SPEC))["state"] == "running"
    assert _notes() == []  # restarted four times, stopped, suspended: nothing needed a person


def test_a_job_that_fails_every_time_is_crash_looping(stack: AirflowStack) -> None:
    poison = "SELECT CASE WHEN value >= 12 THEN CAST(raise_error('poisoned row') AS BIGINT) ELSE value END AS value FROM source"
    spec = _spec("poisoned", transform={"sql": poison}, restart={"max_restarts": 1})
    control, _ = _deploy(spec)
    stack.await_(lambda: read_supervision(control).crash_looping, "crash_looping declared", 400)
    _settled(stack)
    record = read_supervision(control)
    assert len(record.restarts) == 1 and record.crash_looping == control.read_deployment().deployment_id  # type: ignore[union-attr]
    [loop] = [i for i in read_incidents(control) if i.kind == Kind.CRASH_LOOP]
    assert loop.action == "none: a person must look" and "poisoned row" in (loop.error or "") + (loop.diagnosis or "")
    assert read_seen(control).deployment_id == record.crash_looping  # seen down, and left down
    # The run that found it failed at both tries, its notifier called once, with one line.
    [alert] = _notes()
    assert alert["what"] == "alert" and alert["try"] == 2, alert
    assert re.match(
        r"poisoned: crash_looping \((crashed|failed_to_start)\): \1 after 1 restart within 1 hour", alert["said"]
    )
    assert "poisoned row" in alert["said"] and "cure: find the cause in the driver log" in alert["said"], alert
    assert "\n" not in alert["said"]
    assert [s for _, s in _settled(stack)].count("failed") == 1

    # A person fixes the transform and deploys it: the recovery is said once, by the next run.
    fixed, _ = _deploy({**spec, "transform": {"sql": "SELECT value FROM source"}})
    stack.await_(lambda: len(_notes()) > 1, "the recovery said", 180)
    _settled(stack)
    [_, recovery] = _notes()
    assert recovery["what"] == "recovery" and recovery["said"] == [
        f"poisoned: recovered: healthy as deployment {fixed.read_deployment().deployment_id} (was crash_looping)"  # type: ignore[union-attr]
    ], recovery


def test_a_synchronous_job_crashed_over_async_gaps_is_cured_not_started(stack: AirflowStack) -> None:
    spec = _spec(
        "gapped",
        source={"options": {"rowsPerSecond": 20}},
        trigger={"processing_time": "200 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 2000},
    )
    control, first = _deploy(spec)
    stack.await_(lambda: not inspect_checkpoint(spec["checkpoint"]).sync_restart_safe, "async's gaps", 60)
    stack.await_(lambda: control.read_json(ControlArea.STABLE), "the deployment stable", 60)
    sync = {**spec, "async_progress": {"enabled": False, "checkpoint_interval_ms": 1000}}
    # As if this host had run the job synchronously before async was turned on: its last stable spec is one
    # the Airflow side handed over (state/issued.py), so the supervisor may run it again.
    issued.keep(parse_spec(sync), first.deployment_id, "deploy")
    control.write_json(
        ControlArea.STABLE, {"deployment_id": first.deployment_id, "spec": parse_spec(sync).to_mapping()}
    )
    _kill(control)
    restart = _restarted(stack, control, 1)
    assert restart["how"] == "safe_disable" and "cannot restart synchronously" in restart["why"], restart
    status = control.read_status()
    assert status.configuration["async_progress"]["enabled"] is False, status  # type: ignore[union-attr,index]
    kinds = [i.kind for i in read_incidents(control)]
    assert kinds == [Kind.CRASH], kinds  # no synchronous start died on the gaps
    _settled(stack)
