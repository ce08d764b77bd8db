"""``incidents``: what went wrong with a job and what came right again, newest first (state/incidents.py).

A look at the job comes first (insight/checkup.py), so a crash nobody had noticed yet is among them. Exit 0."""

from __future__ import annotations

import argparse
import json
from typing import Any

from airflow_async_stream.cli import EXIT_OK, indented
from airflow_async_stream.cli.names import find_job
from airflow_async_stream.cli.show import when
from airflow_async_stream.insight.checkup import look
from airflow_async_stream.state.incidents import read_incidents

__all__ = ["add_incidents", "cmd_incidents"]


def _print(job: str, health: dict[str, Any], incidents: list[dict[str, Any]]) -> None:
    print(f"{job}: {health['verdict']}: {indented(health['reason'], 4)}")
    if not incidents:
        print("no incidents recorded")
        return
    for incident in incidents:
        print(
            indented(
                f"{when(incident['at'])}  {incident['kind']}  deployment {incident.get('deployment_id') or '-'}", 4
            )
        )
        for key in ("error", "diagnosis", "cure", "action"):
            if incident.get(key):
                print(f"    {key + ':':<11}{indented(incident[key], 15)}")
    print(f"{len(incidents)} incident{'' if len(incidents) == 1 else 's'}")


def cmd_incidents(args: argparse.Namespace) -> int:
    named = find_job(args.job)
    job = named.name or named.checkpoint
    health = look(named.control).health.to_json()
    incidents = [incident.to_json() for incident in read_incidents(named.control)]
    if args.json:
        print(json.dumps({"job": job, "health": health, "incidents": incidents}, indent=2, sort_keys=True))
    else:
        _print(job, health, incidents)
    return EXIT_OK


def add_incidents(sub: Any, job_help: str) -> None:
    p = sub.add_parser(
        "incidents", help="a job's crashes, failed starts and changes, stalls and recoveries, newest first"
    )
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=job_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_incidents)
