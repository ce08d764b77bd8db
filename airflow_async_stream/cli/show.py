"""What a job is doing: ``status`` (the status record, the last batch, the last switch) and ``inspect`` (the
checkpoint's offset and commit logs, and the restart verdict), for people and, with ``--json``, for machines."""

from __future__ import annotations

import argparse
import json
import time
from datetime import UTC, datetime
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, indented
from airflow_async_stream.cli.names import JobNotFoundError, NamedJob, find_job
from airflow_async_stream.insight.checkup import look
from airflow_async_stream.insight.overview import hold_of
from airflow_async_stream.state.checkpoint import Inspection, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import read_incidents
from airflow_async_stream.state.records import State, now
from airflow_async_stream.state.stopped import Stopped, stopped_on_purpose
from airflow_async_stream.supervise.record import shown_supervision

__all__ = ["INCIDENTS_SHOWN", "cmd_inspect", "cmd_status", "status_report", "when"]

#: The newest incidents ``status`` shows (``incidents`` lists them all).
INCIDENTS_SHOWN = 20


def when(ts: Any) -> str:
    """A time stamp and how long ago it was, for people."""
    if not ts:
        return "-"
    ago = time.time() - float(ts)
    stamp = datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"{stamp} ({ago:.0f} s ago)"


def _deployment(status: Any, deployment: Any) -> dict[str, Any] | None:
    """The deployment record, its ``state`` the job's now (the status record's) and ``launch`` how its deploy
    left it: the record itself is written at the deploy only, so its own state would read "running" forever."""
    if deployment is None:
        return None
    data: dict[str, Any] = deployment.to_json()
    data["launch"] = data["state"]
    if status is not None and status.deployment_id == deployment.deployment_id:
        data["state"] = str(status.state)
    return data


def status_report(control: ControlArea, named: NamedJob | None = None) -> dict[str, Any]:
    looked = look(control)
    status, deployment, judged = looked.status, looked.deployment, looked.liveness
    latest = control.latest_progress(status.deployment_id) if status else None
    switch = control.read_switch_account()
    return {
        "health": looked.health.to_json(),
        "incidents": [incident.to_json() for incident in read_incidents(control)[:INCIDENTS_SHOWN]],
        "switch": switch.to_json() if switch else None,
        "control_area": control.url,
        "live": judged.live,
        "liveness": judged.reason,
        "status": status.to_json() if status else None,
        "deployment": _deployment(status, deployment),
        "latest_progress": latest,
        "hold": hold_of(control, now()),
        "stopped_on_purpose": stopped.to_json() if (stopped := stopped_on_purpose(control)) else None,
        "supervision": shown_supervision(control).to_json(),
        "job": (status.job if status else None) or (deployment.job if deployment else None) or (named and named.name),
        "checkpoint": (deployment.checkpoint if deployment else None) or (named.checkpoint if named else None),
    }


def _hold_line(hold: dict[str, Any]) -> str:
    if hold.get("unreadable"):
        return f"UNREADABLE: {hold['purpose']}; `stop --force` or `release --force` ends it"
    return f"{hold['holder']} ({hold['purpose']}) until {when(hold['expires_at'])}"


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
        ("job", report["job"] or "-"),
        ("health", _health_line(report["health"])),
        (
            "state",
            f"{status.get('state', 'never deployed')} ({'live' if report['live'] else 'not live'}: {report['liveness']})",
        ),
        (
            "deployment",
            f"{status.get('deployment_id', '-')} (driver pid {status.get('pid', '-')} on {status.get('host', '-')}"
            + (f", Spark {status['spark_version']})" if status.get("spark_version") else ")"),
        ),
        ("checkpoint", report["checkpoint"] or "-"),
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
        ("started", when(status.get("started_at"))),
        ("heartbeat", when(status.get("heartbeat_at"))),
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
    rows += _switch_rows(report.get("switch"), status)
    if status.get("idle_at"):
        rows.append(("source idle", when(status["idle_at"])))
    rows += _failure_rows(status, report["control_area"])
    rows += [("incident", _incident_line(incident)) for incident in report["incidents"][:3]]
    if report.get("hold"):
        rows.append(("held by", _hold_line(report["hold"])))
    rows += _supervisor_rows(report)
    rows.append(("control area", report["control_area"]))
    width = max(len(k) for k, _ in rows)
    for key, value in rows:
        print(f"{key:<{width}}  {indented(value, width + 2)}")


def _supervisor_rows(report: dict[str, Any]) -> list[tuple[str, str]]:
    """A stop on purpose (never undone by the supervisor), and what the supervisor did."""
    rows = []
    if report.get("stopped_on_purpose"):
        stopped = Stopped.from_json(report["stopped_on_purpose"])
        rows.append(("stopped", f"{stopped.describe()}: {stopped.reason}; `airflow-async-stream resume` starts it"))
    record = report.get("supervision") or {}
    restarts = record.get("restarts") or []
    if record.get("crash_looping") and record["crash_looping"] == (report["status"] or {}).get("deployment_id"):
        rows.append(
            (
                "supervisor",
                f"crash_looping since {when(record.get('crash_looping_at'))}: no more restarts "
                "until a person resumes it",
            )
        )
    elif restarts:
        last = restarts[-1]
        rows.append(
            (
                "supervisor",
                f"{len(restarts)} restart{'' if len(restarts) == 1 else 's'}; the last at "
                f"{when(last.get('at'))} ({last.get('verdict')} {last.get('answered')})",
            )
        )
    return rows


def _switch_rows(switch: dict[str, Any] | None, status: dict[str, Any]) -> list[tuple[str, str]]:
    """The last rehearsal, or this deployment's switches in place."""
    if switch and switch.get("outcome") == "rehearsed":  # a restart that was checked first, not a switch
        return [("last rehearsal", f"rehearsed: {switch.get('reason')}")]
    if not switch or switch.get("deployment_id") != status.get("deployment_id"):
        return []
    pause = f", pause {switch['pause_s']:.2f} s" if switch.get("pause_s") is not None else ""
    switches = int(status.get("switches") or 0)
    latest = switch.get("outcome") or switch.get("phase")
    return [("switched in place", f"{switches} time{'' if switches == 1 else 's'}; latest {latest}{pause}")]


def _health_line(health: dict[str, Any]) -> str:
    since = f" since {when(health['since'])}" if health.get("since") else ""
    return f"{health['verdict']}{since}: {health['reason']}"


def _incident_line(incident: dict[str, Any]) -> str:
    """One incident in a line: when, what, and the diagnosis or error."""
    what = incident.get("diagnosis") or incident.get("error") or ""
    return f"{when(incident.get('at'))} {incident.get('kind')} of {incident.get('deployment_id')}: {what}"


def _failure_rows(status: dict[str, Any], control_area: str) -> list[tuple[str, str]]:
    """The error, and for a failed job the command that says what is wrong and the cure."""
    rows = [("error", status["error"])] if status.get("error") else []
    if status.get("state") == "failed":
        rows.append(("diagnose", f"airflow-async-stream doctor {control_area}  (what is wrong, and the cure)"))
    return rows


def cmd_status(args: argparse.Namespace) -> int:
    named = find_job(args.job)
    report = status_report(named.control, named)
    if args.json:
        print(json.dumps(report, indent=2, sort_keys=True))
    else:
        _print_status(report)
    return EXIT_BAD_STATE if (report["status"] or {}).get("state") == State.FAILED else EXIT_OK


def _kinds(names: list[str]) -> str:
    """'.3.crc .4.crc .5.<uuid>.tmp' -> '2 .crc, 1 .tmp'."""
    counts: dict[str, int] = {}
    for name in names:
        kind = "." + name.rsplit(".", 1)[-1] if "." in name.strip(".") else name
        counts[kind] = counts.get(kind, 0) + 1
    return ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items()))


#: The gaps the text names, newest last (``--json --full`` lists them all).
GAPS_SHOWN = 5


def _gaps(gaps: list[tuple[int, int]]) -> str:
    """The newest gaps, and how many are left out: '7 (newest 5: 40-41, ...; 2 older left out: --json --full)'."""
    shown = ", ".join(f"{a}-{b}" if a != b else str(a) for a, b in gaps[-GAPS_SHOWN:]) or "none"
    if len(gaps) <= GAPS_SHOWN:
        return shown
    return (
        f"{len(gaps)} (newest {GAPS_SHOWN}: {shown}; {len(gaps) - GAPS_SHOWN} older left out: --json --full lists all)"
    )


def _print_inspection(inspection: Inspection) -> None:
    verdict = "SAFE" if inspection.sync_restart_safe else "UNSAFE"
    print(f"checkpoint      {inspection.checkpoint}")
    for log in ("offsets", "commits"):
        view = getattr(inspection, log)
        if not view.present:
            print(f"{log + '/':<15} (absent)")
            continue
        newest = " ".join(str(i) for i in view.ids[-8:])
        gaps = _gaps(view.gaps)
        headers = ", ".join(f"{k}: {v}" for k, v in view.headers.items()) or "-"
        print(f"{log + '/':<15} {len(view.ids)} batches, newest {newest or '-'}; gaps {gaps}; headers {headers}")
        if view.skipped:
            print(f"{'':<15} skipped, not batch files: {_kinds(view.skipped)}")
    for problem in inspection.problems:
        print(f"{'problem':<15} {problem}")
    print(f"{'sync restart':<15} {verdict}: {inspection.reason}")
    if not inspection.sync_restart_safe:
        print(
            f"{'cure':<15} airflow-async-stream doctor {inspection.checkpoint}  (the cure, and what each choice costs)"
        )


def cmd_inspect(args: argparse.Namespace) -> int:
    job = find_job(args.job)
    inspection = inspect_checkpoint(job.checkpoint)
    if not inspection.exists:
        raise JobNotFoundError(f"no checkpoint at {job.checkpoint} (from the {job.named_by}): its query never started")
    if args.json:
        print(json.dumps(inspection.to_json(full=args.full), indent=2, sort_keys=True))
    else:
        _print_inspection(inspection)
    return EXIT_OK if inspection.sync_restart_safe or args.no_fail else EXIT_BAD_STATE
