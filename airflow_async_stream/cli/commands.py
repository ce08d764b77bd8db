"""``airflow-async-stream``: validate specs, plan rollouts, inspect checkpoints, show, switch and stop jobs,
export the schema."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path
from typing import Any

from airflow_async_stream.cli.names import TargetError, resolve_target
from airflow_async_stream.driver.launcher import DeferredLauncher, Launcher
from airflow_async_stream.driver.lifecycle import stop_driver
from airflow_async_stream.exceptions import (
    AsyncStreamError,
    DesiredStateError,
    JobHeldError,
    SpecError,
    SwitchError,
)
from airflow_async_stream.spec.folder import spec_files
from airflow_async_stream.spec.load import load_spec, parse_spec, spec_json_schema
from airflow_async_stream.state.checkpoint import Inspection, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, held, hold_state, revoke
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State, SwitchAccount, SwitchOutcome, hold_ttl_s

__all__ = ["main"]

EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: What a shell reports for a program ended by SIGPIPE (128 + 13), as `git log | head` does.
EXIT_BROKEN_PIPE = 141


def _spec_paths(names: list[str]) -> tuple[list[str], list[str]]:
    """The files named, with each folder replaced by its job spec files (as a rollout reads a desired folder:
    YAML or JSON, not hidden, not ``_fleet.yaml``); and the folders that hold none."""
    paths, empty = [], []
    for name in names:
        if not Path(name).is_dir():
            paths.append(name)
            continue
        found = [str(p) for p in spec_files(Path(name))]
        paths += found
        if not found:
            empty.append(name)
    return paths, empty


def _cmd_validate(args: argparse.Namespace) -> int:
    paths, empty = _spec_paths(args.files)
    for folder in empty:
        print(f"{folder}: (folder): holds no job spec file (.yaml, .yml, .json)")
    failed = len(empty)
    for name in paths:
        try:
            spec = load_spec(name)
        except SpecError as exc:
            failed += 1
            for field, reason in exc.problems:
                print(f"{name}: {field}: {reason}")
            continue
        if not args.quiet:
            state = "on" if spec.async_progress.enabled else "off"
            print(f"{name}: ok ({spec.name}, async progress {state})")
    return EXIT_INVALID if failed else EXIT_OK


def _cmd_plan(args: argparse.Namespace) -> int:
    from airflow_async_stream.rollout.planner import plan_folder

    try:
        items = plan_folder(args.folder, retry_failed=args.retry_failed)
    except DesiredStateError as exc:
        for file, field, reason in exc.problems:
            print(f"{Path(args.folder) / file if file != '(folder)' else args.folder}: {field}: {reason}")
        return EXIT_INVALID
    if args.json:
        rows = [
            {k: i.to_json()[k] for k in ("job", "action", "reason", "diff", "switch", "switch_reason", "held_back")}
            for i in items
        ]
        print(json.dumps(rows, indent=2, sort_keys=True, default=str))
        return EXIT_OK
    for item in items:
        print(f"{item.job:<24} {item.action:<13} {item.reason}")
        if item.switch:
            print(f"{'':<24}   how: {item.switch.replace('_', ' ')} ({item.switch_reason})")
        for field, change in item.diff.items():
            if item.action != "deploy":
                print(f"{'':<24}   {field}: {change['from']!r} -> {change['to']!r}")
    counts = {a: sum(1 for i in items if i.action == a) for a in dict.fromkeys(i.action for i in items)}
    total = f"{len(items)} job{'' if len(items) == 1 else 's'}"
    held = sum(1 for i in items if i.held_back)
    held_back = f" ({held} not retried: failed before)" if held else ""
    print(f"{total}: " + ", ".join(f"{n} {a}" for a, n in counts.items()) + held_back if items else "no jobs")
    return EXIT_OK


def _control_for(target: str) -> ControlArea:
    """A job name, a spec file, a checkpoint, or a control area: all lead to one control area (targets.py)."""
    return resolve_target(target).control


def _when(ts: Any) -> str:
    if not ts:
        return "-"
    ago = time.time() - float(ts)
    stamp = datetime.fromtimestamp(float(ts), timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({ago:.0f} s ago)"


def status_report(control: ControlArea) -> dict[str, Any]:
    status = control.read_status()
    deployment = control.read_deployment()
    judged = liveness(status)
    latest = control.latest_progress(status.deployment_id) if status else None
    switch = control.read_switch_account()
    return {
        "switch": switch.to_json() if switch else None,
        "reconfiguration": switch.to_json() if switch else None,  # the previous release's key; goes in the next
        "control_area": control.url,
        "live": judged.live,
        "liveness": judged.reason,
        "status": status.to_json() if status else None,
        "deployment": deployment.to_json() if deployment else None,
        "latest_progress": latest,
    }


def _batches_run(status: dict[str, Any], latest: dict[str, Any] | None) -> str:
    """The batches this deployment ran, first to newest: the newest from the progress log, which is written
    at every batch (the status record only at heartbeats), so this agrees with the "latest batch" line."""
    first = status.get("first_batch_id")
    newest = max(
        (b for b in (status.get("last_batch_id"), (latest or {}).get("batch_id")) if b is not None), default=None
    )
    if first is None or newest is None:
        return "none yet by this deployment"
    count = newest - first + 1
    return (
        f"{count} run by this deployment (batch {first} to {newest})"
        if count > 1
        else f"1 run by this deployment (batch {first})"
    )


def _print_status(report: dict[str, Any]) -> None:
    status = report["status"] or {}
    deployment = report["deployment"] or {}
    latest = report["latest_progress"]
    async_progress = deployment.get("async_progress") or {}
    rows = [
        ("job", status.get("job") or deployment.get("job") or "-"),
        (
            "state",
            f"{status.get('state', 'never deployed')} ({'live' if report['live'] else 'not live'}: {report['liveness']})",
        ),
        (
            "deployment",
            f"{status.get('deployment_id', '-')} (driver pid {status.get('pid', '-')} on {status.get('host', '-')})",
        ),
        ("checkpoint", deployment.get("checkpoint", "-")),
        (
            "async progress",
            (
                f"on, checkpoint interval {async_progress.get('checkpoint_interval_ms')} ms"
                if async_progress.get("enabled")
                else "off"
            )
            if async_progress
            else "-",
        ),
        ("started", _when(status.get("started_at"))),
        ("heartbeat", _when(status.get("heartbeat_at"))),
        ("batches", _batches_run(status, latest)),
    ]
    if latest:
        durations = latest.get("duration_ms") or {}
        rows.append(
            (
                "latest batch",
                f"{latest['batch_id']}: {latest['num_input_rows']} rows, triggerExecution "
                f"{durations.get('triggerExecution', '-')} ms, offset management {latest.get('offset_management_ms', '-')} ms",
            )
        )
    switch = report.get("switch")
    if switch and switch.get("outcome") == "rehearsed":  # a restart that was checked first, not a switch
        rows.append(("last rehearsal", f"rehearsed: {switch.get('reason')}"))
    elif switch and switch.get("deployment_id") == status.get("deployment_id"):
        pause = f", pause {switch['pause_s']:.2f} s" if switch.get("pause_s") is not None else ""
        switches = int(status.get("switches") or 0)
        rows.append(
            (
                "switched in place",
                f"{switches} time{'' if switches == 1 else 's'}; "
                f"latest {switch.get('outcome') or switch.get('phase')}{pause}",
            )
        )
    if status.get("idle_at"):
        rows.append(("source idle", _when(status["idle_at"])))
    if status.get("error"):
        rows.append(("error", status["error"]))
    rows.append(("control area", report["control_area"]))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {value}")


def _cmd_status(args: argparse.Namespace) -> int:
    report = status_report(_control_for(args.target))
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        _print_status(report)
    return EXIT_OK


def _kinds(names: list[str]) -> str:
    """'.3.crc .4.crc .5.<uuid>.tmp' -> '2 .crc, 1 .tmp'."""
    counts: dict[str, int] = {}
    for name in names:
        kind = "." + name.rsplit(".", 1)[-1] if "." in name.strip(".") else name
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


def _print_inspection(inspection: Inspection) -> None:
    verdict = "SAFE" if inspection.sync_restart_safe else "UNSAFE"
    print(f"checkpoint      {inspection.checkpoint}")
    for log in ("offsets", "commits"):
        view = getattr(inspection, log)
        if not view.present:
            print(f"{log + '/':<15} (absent)")
            continue
        newest = " ".join(str(i) for i in view.ids[-8:])
        gaps = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in view.gaps[-5:]) or "none"
        headers = ", ".join(f"{k}: {v}" for k, v in view.headers.items()) or "-"
        print(f"{log + '/':<15} {len(view.ids)} batches, newest {newest or '-'}; gaps {gaps}; headers {headers}")
        if view.skipped:
            print(f"{'':<15} skipped, not batch files: {_kinds(view.skipped)}")
    for problem in inspection.problems:
        print(f"{'problem':<15} {problem}")
    print(f"{'sync restart':<15} {verdict}: {inspection.reason}")


def _cmd_inspect(args: argparse.Namespace) -> int:
    target = resolve_target(args.target)
    inspection = inspect_checkpoint(target.checkpoint)
    if not inspection.exists:
        raise TargetError(f"no checkpoint at {target.checkpoint} (from the {target.named_by}): its query never started")
    if args.json:
        print(json.dumps(inspection.to_json(full=args.full), indent=2, sort_keys=True))
    else:
        _print_inspection(inspection)
    return EXIT_OK


def _connection_launcher(conn_id: str) -> Launcher:
    """The Airflow connection's launcher, for a driver on a cluster only (the CLI starts without Airflow)."""
    from airflow_async_stream.hooks.launchers import launcher_for

    return launcher_for(conn_id)


def _cmd_stop(args: argparse.Namespace) -> int:
    control = _control_for(args.target)
    holder = Holder.this_process("stop from the command line")
    if args.force:
        revoked = revoke(control, holder, "stop --force from the command line")
        if revoked:
            print(f"forced: ended the hold of {revoked.holder} ({revoked.purpose}); "
                  "its next step fails without changing the job")  # fmt: skip
    try:
        with held(control, holder, hold_ttl_s(stops=1, stop_kill_after_s=args.kill_after)):
            outcome = stop_driver(
                control,
                "stop from the command line",
                graceful_timeout_s=args.graceful_timeout,
                kill_after_s=args.kill_after,
                launcher=DeferredLauncher(partial(_connection_launcher, args.conn_id)),
            )
    except JobHeldError as exc:
        print(f"not stopped: {exc}; add --force to stop it anyway (that holder's next step then fails "
              "without changing the job)", file=sys.stderr)  # fmt: skip
        return EXIT_INVALID
    if outcome.was_live and outcome.status is None:
        print("stopped: the deployment that was launching ended before its driver reported")
        return EXIT_OK
    state = outcome.status.state if outcome.status else "never deployed"
    if outcome.exiting_pid:
        print(f"stopping: state {state}, but driver process {outcome.exiting_pid} on this host is still exiting")
        return EXIT_INVALID
    print(f"{'stopped' if outcome.was_live else 'was not running'}: state {state}")
    return EXIT_INVALID if outcome.was_live and state == State.FAILED else EXIT_OK


def _cmd_release(args: argparse.Namespace) -> int:
    control = _control_for(args.target)
    hold = control.read_hold()
    if not hold:
        print("nobody holds this job")
        return EXIT_OK
    ended = hold_state(hold)
    if ended is None and not args.force:
        print(f"held by {hold.holder} ({hold.purpose}) until {hold.expires_at_text}; "
              "add --force if that holder is gone")  # fmt: skip
        return EXIT_INVALID
    control.remove(ControlArea.HOLD)
    print(f"released the hold of {hold.holder} ({ended or 'forced'})")
    return EXIT_OK


def _cmd_switch(args: argparse.Namespace) -> int:
    from airflow_async_stream.switch.allowed import assign, parse_assignment
    from airflow_async_stream.switch.request import running_spec, switch_in_place

    if args.command == "reconfigure":
        print(
            "airflow-async-stream: 'reconfigure' is now 'switch'; the old name goes in the next release",
            file=sys.stderr,
        )
    control = _control_for(args.target)
    try:
        changes = [parse_assignment(text) for text in args.set]
    except ValueError as exc:
        print(f"airflow-async-stream: {exc}", file=sys.stderr)
        return EXIT_USAGE
    mapping = running_spec(control).to_mapping()
    for key, value in changes:
        try:
            mapping = assign(mapping, key, value)
        except ValueError as exc:
            print(f"airflow-async-stream: {exc}", file=sys.stderr)
            return EXIT_USAGE
    try:
        spec = parse_spec(mapping, source="the spec with --set applied")
        record = switch_in_place(
            control,
            spec,
            require_sync_safe=args.require_sync_safe,
            timeout_s=args.timeout,
            reason="CLI switch",
            log=_progress_log(),
        )
    except SpecError as exc:
        for field, reason in exc.problems:
            print(f"{field}: {reason}", file=sys.stderr)
        return EXIT_INVALID
    except SwitchError as exc:  # the answer is no: the job runs on as it was (the message says how)
        print(f"airflow-async-stream: {exc}", file=sys.stderr)
        return EXIT_INVALID
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True, default=str))
    else:
        _print_switch(record)
    return EXIT_OK if record.outcome == SwitchOutcome.SWITCHED else EXIT_INVALID


def _progress_log() -> logging.Logger:
    """Each phase of a long wait, as it is reached, on stderr (stdout keeps the result, --json included)."""
    log = logging.getLogger("airflow_async_stream.cli.progress")
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(message)s"))
        log.addHandler(handler)
        log.setLevel(logging.INFO)
        log.propagate = False
    return log


def _describe_configuration(configuration: dict[str, Any] | None) -> str:
    configuration = configuration or {}
    settings = configuration.get("async_progress") or {}
    state = f"on, interval {settings.get('checkpoint_interval_ms')} ms" if settings.get("enabled") else "off"
    trigger = ", ".join(f"{k}={v}" for k, v in (configuration.get("trigger") or {}).items()) or "default"
    return f"async progress {state}; trigger {trigger}"


def _print_switch(record: SwitchAccount) -> None:
    headline = {
        SwitchOutcome.SWITCHED: "switched in place",
        SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0: "NOT synchronous: the checkpoint is not safe for it yet; "
        "switched to async progress at interval 0 instead",
    }.get(SwitchOutcome(record.outcome), str(record.outcome))
    print(headline)
    rows = [
        ("request", record.request_id),
        ("before", _describe_configuration(record.before)),
        ("now", _describe_configuration(record.after)),
        ("last batch before", record.last_batch_before),
        ("first batch after", record.first_batch_after if record.first_batch_after is not None else "none yet"),
        (
            "pause",
            f"{record.pause_s:.2f} s (end of the last batch before to the start of the first after)"
            if record.pause_s is not None
            else "not measured (no batch before, or none after yet)",
        ),
    ]
    if record.gate:
        rows.append(("gate", record.gate))
    for name, value in rows:
        print(f"  {name:<18} {value}")


def _cmd_schema(args: argparse.Namespace) -> int:
    print(json.dumps(spec_json_schema(), indent=2))
    return EXIT_OK


_TARGET_HELP = (
    "a job name deployed from this host (looked up in $AIRFLOW_ASYNC_STREAM_HOME/jobs), "
    "a spec file, a checkpoint path or URL, or a control area"
)


def _add_stop(sub: Any) -> None:
    p = sub.add_parser("stop", help="stop a job gracefully (between micro-batches) and wait for its final status")
    p.add_argument("target", metavar="JOB_OR_CHECKPOINT", help=_TARGET_HELP)
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
    p.set_defaults(func=_cmd_stop)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="airflow-async-stream", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("validate", help="validate job spec files (exit 1 and one line per error if any is bad)")
    p.add_argument("files", nargs="+", metavar="FILE_OR_DIR", help="spec files, or folders of them")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.set_defaults(func=_cmd_validate)
    p = sub.add_parser("plan", help="compare a folder of job specs with what runs, and say what a rollout would do")
    p.add_argument("folder", metavar="DIR", help="desired state: one job spec file (.yaml, .yml, .json) per job")
    p.add_argument("--json", action="store_true", help="machine-readable output: job, action, reason, diff")
    p.add_argument(
        "--retry-failed",
        action="store_true",
        help="plan a change whose spec already failed on its job as if it had not (a rollout run asks for this "
        'with conf {"retry_failed": true})',
    )
    p.set_defaults(func=_cmd_plan)
    p = sub.add_parser("status", help="a job's status record and latest progress")
    p.add_argument("target", metavar="JOB_OR_CHECKPOINT", help=_TARGET_HELP)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=_cmd_status)
    p = sub.add_parser("inspect", help="Spark's offset and commit logs, and whether a synchronous restart is safe")
    p.add_argument("target", metavar="JOB_OR_CHECKPOINT", help=_TARGET_HELP + " (read-only)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--full", action="store_true", help="with --json: every batch id and gap, not the newest")
    p.set_defaults(func=_cmd_inspect)
    _add_stop(sub)
    p = sub.add_parser("release", help="end a hold on a job whose holder (a DAG run or process) is gone")
    p.add_argument("target", metavar="JOB_OR_CHECKPOINT", help=_TARGET_HELP)
    p.add_argument("--force", action="store_true", help="release even though the hold has not expired")
    p.set_defaults(func=_cmd_release)
    p = sub.add_parser(
        "switch",
        aliases=["reconfigure"],  # the previous release's name: warns, goes in the next release
        help="switch a running job's query to changed settings in place (no new driver) and print the pause",
    )
    p.add_argument("target", metavar="JOB_OR_CHECKPOINT", help=_TARGET_HELP)
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
    p.set_defaults(func=_cmd_switch)
    p = sub.add_parser("schema", help="print the job spec's JSON Schema")
    p.set_defaults(func=_cmd_schema)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()
        return code
    except BrokenPipeError:  # `... | head` closed the pipe: not an error of ours, and nothing more to say
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python's own flush at exit must not fail
        return EXIT_BROKEN_PIPE
    except (AsyncStreamError, OSError) as exc:
        print(f"airflow-async-stream: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
