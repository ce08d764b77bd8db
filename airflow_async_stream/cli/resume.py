"""``resume``: start a job that runs nothing again (a person's stop, a suspend, a crash loop, a crash) from its
last stable spec, through the safe-disable path where its checkpoint cannot restart as that spec says
(supervise/recover.py). Its restarts count from zero again. Exit 0 once it commits batches; 1 if it runs
already or could not be brought back."""

from __future__ import annotations

import argparse
from functools import partial
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, fail, progress_log
from airflow_async_stream.cli.names import find_job
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.migrations.safe_disable_steps import migration_hold_ttl_s
from airflow_async_stream.state.hold import Holder, held
from airflow_async_stream.state.records import ACTIVE_STATES, now
from airflow_async_stream.supervise.record import read_supervision, write_supervision
from airflow_async_stream.supervise.recover import recover

__all__ = ["add_resume", "cmd_resume"]


def _launcher(conn_id: str) -> Any:
    from airflow_async_stream.hooks.launchers import launcher_for  # the CLI starts without Airflow

    return launcher_for(conn_id)


def cmd_resume(args: argparse.Namespace) -> int:
    named = find_job(args.job)
    control = named.control
    looked = check_up(control, named.checkpoint)
    status = looked.status
    if status is not None and status.state in ACTIVE_STATES and looked.liveness.live:
        return fail(
            f"not resumed: it runs (deployment {status.deployment_id}, {looked.health.verdict})", EXIT_BAD_STATE
        )
    settings = DeploySettings(
        conn_id=args.conn_id,
        startup_timeout_s=args.startup_timeout,
        requested_by="airflow-async-stream resume",
        launcher=partial(_launcher, args.conn_id),
    )
    holder = Holder.this_process("resume from the command line")
    try:
        with held(control, holder, migration_hold_ttl_s(settings, args.wait_timeout, waits=3)) as grant:
            write_supervision(control, grant, read_supervision(control).but(resumed_at=now()))
            done = recover(control, holder, settings, args.wait_timeout, log=progress_log())
    except AsyncStreamError as exc:  # held by another, or not brought back
        return fail(f"not resumed: {exc}", EXIT_BAD_STATE)
    print(f"resumed: deployment {done.deployment_id} commits batches ({done.why})")
    return EXIT_OK


def add_resume(sub: Any, job_help: str) -> None:
    p = sub.add_parser("resume", help="start a stopped, suspended or crash-looping job again from its last stable spec")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=job_help)
    p.add_argument("--conn-id", default="spark_default", help="the Airflow Spark connection to deploy with")
    p.add_argument("--startup-timeout", type=float, default=300.0, help="seconds the driver may take to start")
    p.add_argument("--wait-timeout", type=float, default=300.0, help="seconds each wait for committed batches may take")
    p.set_defaults(func=cmd_resume)
