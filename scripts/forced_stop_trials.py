"""Forced stops fired into real safe-disable migrations at exact moments read from the control area.

    .venv/bin/python scripts/forced_stop_trials.py [--trials 25] [--in-place] [--json FILE]

Each trial deploys a job with async progress tracking on (interval 2 s, so its logs have gaps), starts its
migration in a thread the way a rollout's task runs it (``run_safe_disable``, then the rollback on failure)
under a DAG run's hold, and runs ``airflow-async-stream stop CHECKPOINT --force`` the moment the control area
shows the trial's point (they take turns):

  interval_0_submitted   the interval-0 redeploy's record is written, no status names it yet
  old_driver_stopping    the redeploy is stopping the job's driver
  interval_0_running     the interval-0 driver runs (the migration waits for its batches)
  stopping_for_gate      the migration stops the interval-0 driver for the gate
  sync_submitted         the synchronous deploy's record is written, no status names it yet

With ``--in-place`` the migration switches the running driver in place, and the points are:

  switch_requested       a switch request (to interval 0) is written, the driver has not taken it up
  switch_stopping        the driver is stopping its query for a switch
  in_place_interval_0    the switched query runs at interval 0 (the migration waits for its batches)
  sync_requested         the switch request to synchronous is written

Then it waits for the migration to end and for the host to settle, and counts the runtime drivers still
alive for the checkpoint: the stop must have won, so that count must be 0. A point the migration had already
passed is reported as missed, not counted. Prints one line per trial and a summary; exit 1 when any trial
left a driver running.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
POINTS = ["interval_0_submitted", "old_driver_stopping", "interval_0_running", "stopping_for_gate", "sync_submitted"]
IN_PLACE_POINTS = ["switch_requested", "switch_stopping", "in_place_interval_0", "sync_requested"]


def _setup_airflow(root: Path) -> None:
    os.environ.setdefault("AIRFLOW_HOME", str(root / "airflow-home"))
    os.environ.setdefault("AIRFLOW__CORE__LOAD_EXAMPLES", "false")
    os.environ.setdefault("AIRFLOW_ASYNC_STREAM_HOME", str(root / "async-stream-home"))
    subprocess.run([str(BIN / "airflow"), "db", "migrate"], check=True, capture_output=True)


def _spec(checkpoint: str) -> dict[str, Any]:
    return {
        "name": f"trial-{Path(checkpoint).name}",
        "checkpoint": checkpoint,
        "source": {"format": "rate", "options": {"rowsPerSecond": 100}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "300 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 2000},
    }


def live_drivers(control_url: str) -> list[int]:
    """Pids of runtime driver processes (Python) serving this control area on this host."""
    out = subprocess.run(["pgrep", "-f", f"driver.py --control-area {control_url} "], capture_output=True, text=True)
    pids = []
    for pid in out.stdout.split():
        try:
            argv0 = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[0].decode()
        except OSError:
            continue
        if "python" in Path(argv0).name:
            pids.append(int(pid))
    return pids


def _at_point(point: str, control: Any, original: str) -> bool:
    from airflow_async_stream.state.control import ControlArea

    record = control.read_json(ControlArea.DEPLOYMENT) or {}
    status = control.read_json(ControlArea.STATUS) or {}
    interval_0 = record.get("async_progress") == {"enabled": True, "checkpoint_interval_ms": 0}
    new = record.get("deployment_id") != original
    unreported = status.get("deployment_id") != record.get("deployment_id")
    if point == "interval_0_submitted":
        return interval_0 and new and unreported
    if point == "old_driver_stopping":
        return status.get("deployment_id") == original and status.get("state") in ("stopping", "stopped")
    if point == "interval_0_running":
        return interval_0 and new and not unreported and status.get("state") == "running"
    if point == "stopping_for_gate":
        return interval_0 and new and not unreported and status.get("state") in ("stopping", "stopped")
    if point == "sync_submitted":
        return record.get("async_progress", {}).get("enabled") is False and unreported
    return _at_in_place_point(point, control, interval_0, status)


def _at_in_place_point(point: str, control: Any, interval_0: bool, status: dict[str, Any]) -> bool:
    from airflow_async_stream.state.control import ControlArea

    request = control.read_json(ControlArea.SWITCH_REQUEST) or {}
    switch = control.read_json(ControlArea.SWITCH_ACCOUNT) or {}
    if point == "switch_requested":
        return bool(request) and switch.get("request_id") != request.get("request_id")
    if point == "switch_stopping":
        return switch.get("phase") in ("stopping", "stopped")
    if point == "in_place_interval_0":
        return interval_0 and status.get("switches", 0) >= 1 and status.get("state") == "running"
    if point == "sync_requested":
        return request.get("spec", {}).get("async_progress", {}).get("enabled") is False
    raise ValueError(point)


def _migrate(migration: Any, result: dict[str, Any]) -> None:
    from airflow_async_stream.migrations.run import run_safe_disable

    try:
        run_safe_disable(migration, migration.control.read_status())
        result["migration"] = "succeeded"
    except Exception as exc:  # noqa: BLE001 - the rollout's task rolls back on any failure, so do we
        result["migration"] = f"{type(exc).__name__}: {str(exc)[:160]}"
        try:
            migration.roll_back(str(exc))
            result["rollback"] = "redeployed"
        except Exception as again:  # noqa: BLE001
            result["rollback"] = f"{type(again).__name__}: {str(again)[:160]}"


def trial(n: int, point: str, root: Path, in_place: bool) -> dict[str, Any]:
    from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
    from airflow_async_stream.spec.load import parse_spec
    from airflow_async_stream.state.checkpoint import batch_ids
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Holder

    checkpoint = str(root / f"ck-{n:02d}")
    spec = parse_spec(_spec(checkpoint))
    control = ControlArea.for_checkpoint(checkpoint)
    original = deploy_job(
        spec, Holder.this_process("trial start"), DeploySettings(launcher=LocalLauncher())
    ).deployment_id
    while len(batch_ids(checkpoint, "commits")) < 2:
        time.sleep(0.1)
    holder = Holder(f"DAG run trials/run-{n}", "safe-disable", dag_id="trials", run_id=f"run-{n}")
    migration = SafeDisable(
        spec, holder, DeploySettings(launcher=LocalLauncher(), redeploy=True), wait_timeout_s=120, in_place=in_place
    )
    result: dict[str, Any] = {"trial": n, "point": point}
    thread = threading.Thread(target=_migrate, args=(migration, result), daemon=True)
    thread.start()
    while thread.is_alive() and not _at_point(point, control, original):
        time.sleep(0.01)
    if not thread.is_alive():
        result["fired"] = False
    else:
        stop = subprocess.run(
            [str(BIN / "airflow-async-stream"), "stop", checkpoint, "--force"], capture_output=True, text=True
        )
        result.update(fired=True, stop_exit=stop.returncode, stop_said=stop.stdout.strip().splitlines()[-1:])
    thread.join(600)
    deadline = time.monotonic() + 30  # a driver being launched right now reports within seconds
    while live_drivers(control.url) and time.monotonic() < deadline:
        time.sleep(0.2)
    status = control.read_json(ControlArea.STATUS) or {}
    result.update(drivers_left=len(live_drivers(control.url)), final_state=status.get("state"))
    if result["drivers_left"] or not result["fired"]:
        stop_job(
            control,
            Holder.this_process("trial clean-up"),
            DeploySettings(launcher=LocalLauncher()),
            "trial clean-up",
            force=True,
        )
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--trials", type=int, default=25)
    parser.add_argument("--in-place", action="store_true", help="let the migration switch in place where it can")
    parser.add_argument("--json", help="write every trial's record here")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="forced-stop-trials-"))
    _setup_airflow(root)
    results = []
    for n in range(args.trials):
        points = IN_PLACE_POINTS if args.in_place else POINTS
        result = trial(n, points[n % len(points)], root, args.in_place)
        results.append(result)
        print(json.dumps(result), flush=True)
    fired = [r for r in results if r["fired"]]
    left = [r for r in fired if r["drivers_left"]]
    print(
        f"{len(fired)} forced stops fired into {len(results)} migrations ({len(results) - len(fired)} missed "
        f"their point); {len(left)} left a driver running"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())
