"""What changed a job, and who: its last change and the stream's pause across it, its last safe-disable
migration and the pauses of its own changes, its history with its incidents, and the DAGs that change it
(the hold's ``dag-runs.json``, and the rollout's, migration's and deployment's records). Read-only."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.insight.groups import describe
from airflow_async_stream.insight.report import Report
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Deployment
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome

__all__ = ["dags", "history", "last_change", "last_migration", "summarized"]

#: What a kind of change (a hold's purpose's first word) says of its DAG on the page.
_ROLES = {"deploy": "deploys it", "stop": "stops it", "safe-disable": "migrates it", "rollout": "rolls it out"}


def dags(
    control: ControlArea, runs: dict[str, Any], deployment: Deployment | None, hold: dict[str, Any] | None
) -> list[dict[str, Any]]:
    """The DAGs the control area says change the job: who holds it now, then the DAG run that last took its
    hold for each kind of change (``dag-runs.json``), then the DAGs the rollout's, the migration's and the
    deployment's records name (a deploy that took no hold is known only there)."""
    found = [{"role": "holds it now", "dag_id": hold["dag_id"], "run_id": None}] if hold and hold.get("dag_id") else []
    for kind, run in sorted(runs.items(), key=lambda item: -float(item[1].get("at") or 0)):
        found.append(
            {"role": _ROLES.get(kind, f"{kind}s it"), "dag_id": run.get("dag_id"), "run_id": run.get("run_id")}
        )
    rollout, migration = control.read_json(ControlArea.ROLLOUT) or {}, control.read_json(ControlArea.MIGRATION) or {}
    airflow = deployment.airflow if deployment else {}
    for role, record in (("rolls it out", rollout), ("migrates it", migration), ("deploys it", airflow)):
        if record.get("dag_id") and not any(f["dag_id"] == record["dag_id"] for f in found):
            found.append({"role": role, "dag_id": record["dag_id"], "run_id": record.get("run_id")})
    return found


def last_change(report: Report, switch: SwitchAccount | None) -> dict[str, Any] | None:
    """The newest change among the batches read, else the last switch in place the driver accounted for (older
    than those batches)."""
    changes = report.changes()
    if changes:
        change = changes[-1]
    elif switch and switch.outcome == SwitchOutcome.SWITCHED and switch.after:
        change = {
            "at": switch.started_at,
            "batch_id": switch.first_batch_after,
            "kind": "switch",
            "from": switch.before,
            "to": switch.after,
            "pause_s": switch.pause_s,
        }
    else:
        return None
    return summarized(change)


def summarized(change: dict[str, Any]) -> dict[str, Any]:
    """A change with its ``summary`` in words (``switch: sync, ... -> async 0 ms, ...``), as the pages show it."""
    return {**change, "summary": f"{change['kind']}: {describe(change['from'])} -> {describe(change['to'])}"}


def _its_own(changes: list[dict[str, Any]], since: float, runs: dict[str, Any]) -> list[dict[str, Any]]:
    """The changes a migration that began at ``since`` made: up to its switch to synchronous (its goal), and
    none after another kind of change took the hold (later switches and deploys are not its own)."""
    later = [float(r.get("at") or 0) for r in runs.values() if float(r.get("at") or 0) > since]
    until = min(later, default=float("inf"))
    own = []
    for change in changes:
        if change["at"] < since or change["at"] >= until:
            continue
        own.append(change)
        if not ((change.get("to") or {}).get("async_progress") or {}).get("enabled"):
            break  # synchronous: the migration's last change
    return own


def last_migration(control: ControlArea, runs: dict[str, Any], report: Report) -> dict[str, Any] | None:
    """The DAG run that last took the hold for the safe-disable migration, the changes since it started among
    the batches read, and their pauses in all (None when its start is older than those batches), and its
    failed step if it noted one."""
    run = runs.get("safe-disable")
    if not run:
        return None
    since = float(run.get("at") or 0)
    changes = _its_own(report.changes(), since, runs)
    covered = bool(report.batches) and report.batches[0].start <= since
    failed = control.read_json(ControlArea.MIGRATION) or {}
    return {
        "dag_id": run.get("dag_id"),
        "run_id": run.get("run_id"),
        "at": since,
        "changes": len(changes) if covered else None,
        "pause_s": round(sum(c["pause_s"] for c in changes), 3) if covered and changes else None,
        "failed_step": failed.get("failed_step") if failed.get("run_id") == run.get("run_id") else None,
    }


def history(
    changes: list[dict[str, Any]],
    incidents: list[dict[str, Any]],
    decisions: list[dict[str, Any]] = (),  # type: ignore[assignment]
) -> list[dict[str, Any]]:
    """A job's deployments and switches (from its batches), its incidents and the tuner's decisions, newest
    first, each in words."""
    found = [
        {
            "at": c["at"],
            "kind": c["kind"],
            "text": f"batch {c['batch_id']}: "
            + c["summary"].split(": ", 1)[-1]
            + (f"; the stream paused {c['pause_s']:.2f} s" if c.get("pause_s") is not None else ""),
        }
        for c in changes
    ]
    for i in incidents:
        text = i.get("diagnosis") or i.get("error") or ""
        at = i.get("since") if i["kind"] in ("crash", "failed_start") and i.get("since") else i["at"]  # when it ended
        found.append(
            {
                "at": at,
                "kind": i["kind"],
                "text": f"{text}" + (f"; cure: {i['cure']}" if i.get("cure") else ""),
                "deployment_id": i.get("deployment_id"),
                "incident": True,
            }
        )
    for d in decisions:
        found.append(
            {
                "at": d.get("at"),
                "kind": "autotune",
                "text": f"{d.get('act')}: {d.get('reason')}" + (f" ({d['error']})" if d.get("error") else ""),
            }
        )
    return sorted(found, key=lambda entry: -float(entry["at"] or 0))
