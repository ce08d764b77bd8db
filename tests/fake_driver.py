"""A stand-in for a live driver, for tests of stopping and signalling (no Spark): it keeps a fresh
status record in a control area, its command line naming it as the real driver's does, and, with ``--obey``, answers a stop request like the real driver
(final status ``stopped``), then lingers ``--linger`` seconds before it exits, as a JVM does.

    python -m tests.fake_driver --control-area URL --deployment-id ID [--obey] [--linger S] [--linger-until FILE]
                                [--record-deployment [--exit-record]]

``--linger-until FILE``: after its final status, linger until FILE exists (the test decides when it exits).

``--record-deployment`` writes the deployment record naming this process as its launcher, as a
deploy from this host would; ``--exit-record`` says in it that its log pump records its exit (pipe its
output through ``python -m airflow_async_stream.driver.log ... --exit-record``, as a launch does).
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_async_stream.driver.process import identify
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import now

if TYPE_CHECKING:
    from airflow_async_stream.driver.local import LocalLauncher

ROOT = Path(__file__).resolve().parents[1]


def command(control_url: str, deployment_id: str, *args: str) -> list[str]:
    """The argument list that starts a fake driver (run it from the repository's root)."""
    return [
        sys.executable,
        "-m",
        "tests.fake_driver",
        "--control-area",
        control_url,
        "--deployment-id",
        deployment_id,
        *args,
    ]


def started(
    control: ControlArea, deployment_id: str, *args: str, processes: list[Any], before: list[str] | None = None
) -> subprocess.Popen[bytes]:
    """A fake driver of ``deployment_id`` in its own session (after ``before``, e.g. ``unshare``), added to
    ``processes`` (the test's to clean up), once its status record names it."""
    from tests.helpers import until

    argv = [*(before or []), *command(control.url, deployment_id, *args)]
    process = subprocess.Popen(argv, cwd=ROOT, start_new_session=True)
    processes.append(process)
    until(
        lambda: (control.read_json(ControlArea.STATUS) or {}).get("deployment_id") == deployment_id,
        30,
        what="the fake driver's status",
        alive=process,
    )
    return process


def launcher() -> LocalLauncher:
    """This host's launcher as the Airflow side builds it for a missing connection, whose spark-submit is a
    fake driver that obeys stop requests (imported here only: a fake driver's own start imports nothing more)."""
    from airflow_async_stream.driver.args import parse_driver_arguments
    from airflow_async_stream.driver.launcher import Submission
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.hooks.connection_lookup import secret_options_for

    class FakeDriverLauncher(LocalLauncher):
        def command(self, submission: Submission) -> list[str]:
            args = parse_driver_arguments(submission.arguments)
            return command(args.control_area, args.deployment_id, "--obey")

    return FakeDriverLauncher(env={"PYTHONPATH": str(ROOT)}, secrets=secret_options_for)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--control-area", dest="control", required=True)  # named as the runtime driver's are, so
    parser.add_argument("--deployment-id", required=True)  # its own command line proves which driver it is
    parser.add_argument("--obey", action="store_true")
    parser.add_argument("--linger", type=float, default=0.0)
    parser.add_argument("--linger-until")
    parser.add_argument("--record-deployment", action="store_true")
    parser.add_argument("--exit-record", action="store_true")
    args = parser.parse_args()
    control = ControlArea(args.control)
    control.ensure()
    if args.record_deployment:
        driver = {
            "kind": "local-process",
            **identify(os.getpid()).to_json(),
            **({"exit_record": True} if args.exit_record else {}),
        }
        record = {"deployment_id": args.deployment_id, "driver": driver, "deployed_at": now(), "confirmed_at": now()}
        control.write_json(ControlArea.DEPLOYMENT, record)
    status = {"deployment_id": args.deployment_id, "pid": os.getpid(), "host": socket.gethostname(), "batches": 1}
    while True:
        if args.obey and control.stop_request_for(args.deployment_id):
            control.write_json(ControlArea.STATUS, {**status, "state": "stopped", "heartbeat_at": now()})
            time.sleep(args.linger)
            while args.linger_until and not os.path.exists(args.linger_until):
                time.sleep(0.02)
            return
        control.write_json(ControlArea.STATUS, {**status, "state": "running", "heartbeat_at": now()})
        time.sleep(0.05)


if __name__ == "__main__":
    main()
