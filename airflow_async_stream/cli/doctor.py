"""``doctor``: what is wrong with a job that will not run, and the cure with what each choice costs
(insight/doctor.py). Read-only; exit 0 when nothing is wrong, 1 when something is."""

from __future__ import annotations

import argparse
import json
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK
from airflow_async_stream.cli.names import find_job
from airflow_async_stream.insight.doctor import FINE, diagnose
from airflow_async_stream.insight.symptoms import read_symptoms

__all__ = ["add_doctor", "cmd_doctor"]


def _print(data: dict[str, Any]) -> None:
    print(f"job          {data['job'] or '-'} (checkpoint {data['checkpoint']})")
    print(f"diagnosis    {data['diagnosis']}: {data['summary']}")
    for number, line in enumerate(data["evidence"]):
        print(f"{'evidence' if number == 0 else '':<12} - {line}")
    if data["inspection"]["exists"]:
        verdict = "SAFE" if data["sync_restart_safe"] else "UNSAFE"
        print(f"sync restart {verdict}: {data['inspection']['reason']}")
    else:  # nothing to restart: no verdict to give
        print(f"sync restart -: {data['inspection']['reason']}")
    print(f"cure         {data['cure']}")
    if data["choices"]:
        print("choices (nothing here changes the checkpoint):")
    for number, choice in enumerate(data["choices"], 1):
        mark = " (recommended)" if choice.get("recommended") else ""
        re_run = choice.get("re_run_batches")
        again = "" if re_run is None else f" [batches run again: {re_run}]"
        print(f"  {number}. {choice['choice']}{mark}{again}")
        print(f"     costs: {choice['costs']}")


def cmd_doctor(args: argparse.Namespace) -> int:
    named = find_job(args.job)
    data = diagnose(read_symptoms(named.checkpoint, named.control)).to_json()
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        _print(data)
    return EXIT_OK if data["diagnosis"] in FINE else EXIT_BAD_STATE


def add_doctor(sub: Any, job_help: str) -> None:
    p = sub.add_parser(
        "doctor",
        help='what is wrong with a job that will not run (e.g. "batch N doesn\'t exist"), and its cure (read-only)',
    )
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=job_help + "; a checkpoint no control area sits beside")
    p.add_argument("--json", action="store_true", help="machine-readable output: diagnosis, cure, sync_restart_safe")
    p.set_defaults(func=cmd_doctor)
