"""``airflow-async-stream``: the parser and the commands on a folder of specs (``plan``, ``schema``); ``validate``
is in validate.py; the commands on one job are in show.py (``status``, ``inspect``), report.py (``report``), doctor.py (``doctor``) and
change.py (``stop``, ``release``, ``switch``), resume.py (``resume``)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import textwrap
from pathlib import Path
from typing import Any, NoReturn

from airflow_async_stream.cli import (
    EXIT_BAD_INPUT,
    EXIT_BROKEN_PIPE,
    EXIT_OK,
    PREFIX,
    Printable,
    Stderr,
    exit_codes,
    fail,
)
from airflow_async_stream.cli.change import cmd_release, cmd_switch
from airflow_async_stream.cli.doctor import add_doctor
from airflow_async_stream.cli.incidents import add_incidents
from airflow_async_stream.cli.jobs import add_list
from airflow_async_stream.cli.report import add_report
from airflow_async_stream.cli.resume import add_resume
from airflow_async_stream.cli.show import cmd_inspect, cmd_status
from airflow_async_stream.cli.stop import cmd_stop
from airflow_async_stream.cli.validate import add_spark_version, add_validate, judged_line, judging_for
from airflow_async_stream.exceptions import (
    AsyncStreamError,
    DesiredStateError,
)
from airflow_async_stream.spec.schema import spec_json_schema

__all__ = ["build_parser", "main"]


#: What ``plan --json`` says of each job.
_PLAN_FIELDS = ("job", "action", "reason", "diff", "how", "how_reason", "held_back", "advice", "analysis")


def _print_plan(items: list[Any]) -> None:
    """One line per job, then what changes, how, the advice and the analysis, and the counts."""
    for item in items:
        print(f"{item.job:<24} {item.action:<13} {item.reason}")
        if item.how:
            print(f"{'':<24}   how: {item.how.replace('_', ' ')} ({item.how_reason})")
        for field, change in item.diff.items():
            if item.action != "deploy":
                print(f"{'':<24}   {field}: {change['from']!r} -> {change['to']!r}")
        for advice in item.advice:
            print(f"{'':<24}   advice: {advice['summary']}")
        if item.analysis and item.analysis["ok"]:
            print(f"{'':<24}   analysis: ok ({item.analysis['seconds']:.2f} s)")
        for problem in (item.analysis or {}).get("problems", []):
            print(f"{'':<24}   analysis: {problem['field']}: {problem['reason']}")
        for note in (item.analysis or {}).get("not_checked", []):
            print(f"{'':<24}   not checked: {note}")
    counts = {a: sum(1 for i in items if i.action == a) for a in dict.fromkeys(i.action for i in items)}
    total = f"{len(items)} job{'' if len(items) == 1 else 's'}"
    held = sum(1 for i in items if i.held_back)
    held_back = f" ({held} not retried: failed before)" if held else ""
    print(f"{total}: " + ", ".join(f"{n} {a}" for a, n in counts.items()) + held_back if items else "no jobs")
    analyzed = [i.analysis for i in items if i.analysis]
    if analyzed:
        wrong = sum(1 for a in analyzed if not a["ok"])
        print(
            f"analysis: {len(analyzed)} change{'' if len(analyzed) == 1 else 's'} analyzed, "
            f"{len(analyzed) - wrong} ok, {wrong} wrong"
        )


def _cmd_plan(args: argparse.Namespace) -> int:
    from airflow_async_stream.rollout.analysis import refused_by_analysis
    from airflow_async_stream.rollout.planner import plan_folder

    try:
        with judging_for(args.spark_version) as spark:
            items = plan_folder(args.folder, retry_failed=args.retry_failed, analyze=args.analyze)
    except DesiredStateError as exc:
        for file, field, reason in exc.problems:
            print(
                f"{args.folder}: {reason}" if file == "(folder)" else f"{Path(args.folder) / file}: {field}: {reason}"
            )
        return EXIT_BAD_INPUT
    if args.json:
        rows = [{k: i.to_json()[k] for k in _PLAN_FIELDS} for i in items]
        print(json.dumps(rows, indent=2, sort_keys=True, default=str))
        return EXIT_BAD_INPUT if refused_by_analysis(items) else EXIT_OK
    print(judged_line(spark))
    _print_plan(items)
    refused = refused_by_analysis(items)
    if refused:
        print(f"{len(refused)} problem(s) found by analysis: a rollout with analyze=True would change no job")
    return EXIT_BAD_INPUT if refused else EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(spec_json_schema(), indent=2))
    return EXIT_OK


_JOB_HELP = (
    "a job name (looked up in $AIRFLOW_ASYNC_STREAM_HOME/jobs, then in the [async_stream] fleet indexes and "
    "checkpoint folders), a spec file, a checkpoint path or URL, or a control area"
)


def _add_stop(sub: Any) -> None:
    p = sub.add_parser("stop", help="stop a job gracefully (between micro-batches) and wait for its final status")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=_JOB_HELP)
    p.add_argument("--graceful-timeout", type=float, default=60.0, help="seconds the batch in flight may take")
    p.add_argument(
        "--kill-after",
        type=float,
        default=120.0,
        help="kill a driver of this host, or one on YARN or Kubernetes, after this long",
    )
    p.add_argument(
        "--conn-id",
        default="spark_default",
        help="the Airflow Spark connection that kills a cluster-mode driver (YARN, Kubernetes); default spark_default",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="stop even while a migration, rollout or DAG run holds the job; that holder then fails unchanged",
    )
    p.add_argument(
        "--driver-gone",
        metavar="HOST",
        help="HOST, which launched the job's newest driver, is gone for good (and its driver with it): record the "
        "driver's exit, which deploys from other hosts wait for; refused while that driver still reports",
    )
    p.set_defaults(func=cmd_stop)


def _add_inspect(sub: Any) -> None:
    p = sub.add_parser("inspect", help="Spark's offset and commit logs, and whether a synchronous restart is safe")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=_JOB_HELP + " (read-only)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--full", action="store_true", help="with --json: every batch id and gap, not the newest")
    p.add_argument(
        "--no-fail", action="store_true", help="exit 0 on an UNSAFE verdict too (exit 1 without it, for scripts)"
    )
    p.set_defaults(func=cmd_inspect)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, whose usage errors say what is wrong on one line with the one prefix (exit 2)."""

    def error(self, message: str) -> NoReturn:
        where = self.prog.removeprefix("airflow-async-stream").strip()
        sys.exit(fail(f"{where + ': ' if where else ''}{message} (see {self.prog} --help)"))


#: What ``--help`` says of the tool (the module's docstring is for the code's readers).
_DESCRIPTION = (
    "Check, see and change the PySpark Structured Streaming jobs airflow-async-stream deploys: validate spec "
    "files, plan a rollout, look at a job (status, inspect, report, doctor, incidents), and stop, resume, "
    "release or switch it. Only stop, resume, release and switch change anything."
)


def _exit_codes_text() -> str:
    """The README's exit-code table as plain lines."""
    lines = [
        textwrap.fill(means.replace("`", ""), 79, initial_indent=f"  {code:<5}", subsequent_indent=" " * 7)
        for code, means in exit_codes()
    ]
    return "exit codes:\n" + "\n".join(lines)


def _root_parser() -> _Parser:
    """The tool's parser: what it does, and its exit codes after the commands."""
    return _Parser(
        prog="airflow-async-stream",
        description=textwrap.fill(_DESCRIPTION, 79, break_on_hyphens=False),
        epilog=_exit_codes_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def build_parser() -> argparse.ArgumentParser:
    parser = _root_parser()
    sub = parser.add_subparsers(dest="command", required=True)
    add_validate(sub)
    p = sub.add_parser("plan", help="compare a folder of job specs with what runs, and say what a rollout would do")
    p.add_argument("folder", metavar="DIR", help="desired state: one job spec file (.yaml, .yml, .json) per job")
    p.add_argument("--json", action="store_true", help="machine-readable output: job, action, reason, diff")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="plan a change whose spec already failed on its job as if it had not (a rollout run asks for this "
        'with conf {"retry_failed": true})',
    )
    p.add_argument(
        "--analyze",
        action="store_true",
        help="build each changed job's query on a local Spark first (as validate --analyze); exit 2 if one is wrong",
    )
    add_spark_version(p)
    p.set_defaults(func=_cmd_plan)
    add_list(sub)
    p = sub.add_parser("status", help="a job's status record and latest progress")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=_JOB_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_status)
    _add_inspect(sub)
    add_report(sub, _JOB_HELP)
    add_doctor(sub, _JOB_HELP)
    add_incidents(sub, _JOB_HELP)
    _add_stop(sub)
    add_resume(sub, _JOB_HELP)
    p = sub.add_parser("release", help="end a hold on a job whose holder (a DAG run or process) is gone")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=_JOB_HELP)
    p.add_argument("--force", action="store_true", help="release even though the hold has not expired")
    p.set_defaults(func=cmd_release)
    p = sub.add_parser(
        "switch",
        help="switch a running job's query to changed settings in place (no new driver) and print the pause",
    )
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=_JOB_HELP)
    p.add_argument(
        "--set",
        action="append",
        required=True,
        metavar="KEY=VALUE",
        help="a dotted spec field and its value, read as YAML (e.g. async_progress.checkpoint_interval_ms=0); repeat",
    )
    p.add_argument(
        "--require-sync-safe",
        action="store_true",
        help="start synchronously only if the stopped checkpoint is safe for it, else async on at interval 0",
    )
    p.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for the switch and its first batch")
    p.add_argument("--json", action="store_true", help="machine-readable output: the driver's account")
    p.set_defaults(func=cmd_switch)
    p = sub.add_parser("schema", help="print the job spec's JSON Schema")
    p.set_defaults(func=_cmd_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = Printable(sys.stdout), Printable(sys.stderr)
    # warnings too, with the one prefix
    logging.basicConfig(format=PREFIX + "%(message)s", level=logging.WARNING, handlers=[Stderr()])
    logging.captureWarnings(True)  # a library's DeprecationWarning and the like, the same way
    try:
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours, and nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit must not fail
        return EXIT_BROKEN_PIPE
    except (AsyncStreamError, OSError) as exc:
        return fail(str(exc))
    finally:
        sys.stdout, sys.stderr = streams


if __name__ == "__main__":
    sys.exit(main())
