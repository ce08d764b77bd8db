"""The doctor: what is wrong with a job that will not run, and its cure in words, with what each choice costs.

Read-only: it never deletes, renames or rewrites a checkpoint file (a repair is the user's to ask for). The
cure for ``batch N doesn't exist`` and what its alternatives cost: gaps.py.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_async_stream.insight.gaps import MIGRATION, batch_missing
from airflow_async_stream.insight.symptoms import SIGNS, Symptoms, overlapping_runs, stray_commits

__all__ = ["KINDS", "Diagnosis", "diagnose"]

#: Every diagnosis, in the order the doctor looks for them: the first that applies is the diagnosis.
KINDS = (
    "second_writer",
    "commit_without_offsets",
    "batch_missing",
    "unsafe_checkpoint",
    "never_started",
    "failed",
    "never_deployed",
    "nothing_known",
)
#: The diagnoses that find nothing wrong (``doctor`` exits 0 on them).
FINE = frozenset({"never_deployed", "nothing_known"})


@dataclass
class Diagnosis:
    """The doctor's answer: one diagnosis, the evidence it rests on, and the cure."""

    job: str | None
    checkpoint: str
    diagnosis: str
    summary: str
    cure: str
    sync_restart_safe: bool
    evidence: list[str] = field(default_factory=list)
    choices: list[dict[str, Any]] = field(default_factory=list)
    control_area: bool = False
    inspection: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def diagnose(symptoms: Symptoms) -> Diagnosis:
    """The first diagnosis of KINDS that the symptoms show."""
    inspection = symptoms.inspection
    base: dict[str, Any] = {
        "job": symptoms.name,
        "checkpoint": symptoms.checkpoint,
        "sync_restart_safe": inspection.sync_restart_safe,
        "control_area": symptoms.control_area,
        "inspection": inspection.to_json(),
    }
    for judge in (_second_writer, _stray_commit, batch_missing, _unsafe, _never_started, _failed, _never_deployed):
        found = judge(symptoms)
        if found is not None:
            return Diagnosis(**base, **found)
    where = "its checkpoint and control area" if symptoms.control_area else "its checkpoint (no control area)"
    return Diagnosis(
        **base,
        diagnosis="nothing_known",
        summary=f"nothing wrong is known from {where}: {inspection.reason}",
        cure="nothing to cure" + (" (the job runs)" if symptoms.live else ""),
        evidence=symptoms.status_lines(),
    )


def _never_deployed(symptoms: Symptoms) -> dict[str, Any] | None:
    """No checkpoint and no record of a deploy: nothing ran, so nothing can be wrong yet."""
    if symptoms.inspection.exists or symptoms.control_area:
        return None
    return {
        "diagnosis": "never_deployed",
        "summary": f"the job was never deployed: no checkpoint at {symptoms.checkpoint} and no control area",
        "cure": "nothing to cure: deploy it (its first start makes the checkpoint)",
        "evidence": [],
    }


def _second_writer(symptoms: Symptoms) -> dict[str, Any] | None:
    runs = overlapping_runs(symptoms.events, "query_run_id")
    deployments = overlapping_runs(symptoms.events, "deployment_id")
    logged = [f"driver log: {line}" for line in symptoms.log_lines("second_writer")]
    said = (symptoms.status.error or "") if symptoms.status else ""
    if not logged and SIGNS["second_writer"].search(said):  # recorded before the log's last lines were written
        logged = [f"status error: {line.strip()}" for line in said.splitlines() if SIGNS["second_writer"].search(line)][
            :1
        ]
    if not (runs or deployments or logged):
        return None
    evidence = [f"deployments {a} and {b} both reported batches at the same time" for a, b in deployments[:3]]
    evidence += [f"query runs {a} and {b} reported batches at the same time" for a, b in runs[:3]]
    evidence += logged
    return {
        "diagnosis": "second_writer",
        "summary": "two drivers wrote this checkpoint at once (an orphaned driver and a new deploy, or a query "
        "started outside this project): their batches may overwrite or skip each other's",
        "cure": "find and stop every writer but one first (`status` names the host and pid of the driver this "
        "project knows; look for other spark-submit or notebook sessions on the checkpoint), then run `doctor` "
        f"again: if a synchronous restart is then unsafe, the cure is {MIGRATION}",
        "evidence": evidence + symptoms.status_lines(),
        "choices": [
            {
                "choice": "stop the other writer, then doctor again",
                "re_run_batches": None,
                "costs": "the batches the two wrote together may have been planned twice: their rows can be in the "
                "sink twice; nothing is rewound",
            },
        ],
    }


def _stray_commit(symptoms: Symptoms) -> dict[str, Any] | None:
    stray = stray_commits(symptoms.inspection)
    if not stray:
        return None
    newest = symptoms.inspection.latest_offset
    ahead = [c for c in stray if newest is None or c > newest]
    shown = ", ".join(f"commits/{c}" for c in stray[:10]) + (" ..." if len(stray) > 10 else "")
    evidence = [f"{shown}: no offsets file beside {'it' if len(stray) == 1 else 'them'}"] + symptoms.status_lines()
    if not ahead:
        return {
            "diagnosis": "commit_without_offsets",
            "summary": "commit files below the newest offsets have no offsets file: a write that went on after a "
            "failure, or a second writer; a restart reads only the newest files, so it is not blocked",
            "cure": "nothing blocks a restart; check that one driver writes this checkpoint (`status`), and keep "
            "the files (they are evidence, and Spark ignores them)",
            "evidence": evidence,
        }
    resume = "batch 0" if newest is None else f"batch {newest}"
    return {
        "diagnosis": "commit_without_offsets",
        "summary": f"commits/{ahead[0]} is ahead of the newest offsets ({'none' if newest is None else newest}): "
        f"a restart runs {resume} again and dies on reaching batch {ahead[0]} ('Concurrent update to the commit "
        "log'), because Spark never overwrites a commit file",
        "cure": "a repair only you can ask for: copy the checkpoint aside as a backup, then move "
        + ", ".join(f"commits/{c}" for c in ahead[:10])
        + " out of it (nothing here deletes or moves checkpoint files); then run `doctor` again",
        "evidence": evidence,
        "choices": [
            {
                "choice": "move the stray commit files out (after a backup)",
                "re_run_batches": 1 if newest is not None else None,
                "costs": f"{resume} runs again: its rows reach the sink twice unless the sink is idempotent",
            },
        ],
    }


def _unsafe(symptoms: Symptoms) -> dict[str, Any] | None:
    inspection = symptoms.inspection
    if inspection.sync_restart_safe or not inspection.exists or (symptoms.live and symptoms.async_on):
        return None
    corrupt = bool(inspection.problems)
    return {
        "diagnosis": "unsafe_checkpoint",
        "summary": f"a synchronous restart is not safe: {inspection.reason}",
        "cure": (
            "a repair only you can ask for: copy the checkpoint aside as a backup, then fix or move the files "
            "named; nothing here rewrites them"
            if corrupt
            else f"run {MIGRATION}: two batches at interval 0 bring the logs back in step"
        ),
        "evidence": [inspection.reason] + symptoms.status_lines(),
    }


def _never_started(symptoms: Symptoms) -> dict[str, Any] | None:
    status, deployment = symptoms.status, symptoms.deployment
    if deployment is None or symptoms.live:
        return None
    started = status is not None and status.deployment_id == deployment.deployment_id and status.query_id
    if started:
        return None
    errors = _causes(symptoms.log_lines("error", limit=20))
    said = " ".join([(status.error if status else None) or "", *errors])
    check = (
        "`airflow-async-stream validate --analyze SPEC` builds the query on a local Spark and would have caught "
        "this before the deploy (plain `validate` checks the spec, not the query)"
        if QUERY_ERRORS.search(said)
        else "check the spec with `airflow-async-stream validate --analyze SPEC`"
    )
    return {
        "diagnosis": "never_started",
        "summary": f"deployment {deployment.deployment_id} never started its query (state "
        f"{status.state if status else deployment.state})",
        "cure": f"fix what the driver's error says (below, and in its driver log), then deploy again; {check}; the "
        "checkpoint holds no batch of this deployment, so nothing is re-run",
        "evidence": symptoms.status_lines() + [f"driver log: {line}" for line in errors],
    }


#: Spark's words for a query it cannot plan: what ``validate --analyze`` builds the query to find.
QUERY_ERRORS = re.compile(
    r"AnalysisException|ParseException|UNRESOLVED_COLUMN|TABLE_OR_VIEW_NOT_FOUND|"
    r"PARSE_SYNTAX_ERROR|UNRESOLVED_ROUTINE|DATATYPE_MISMATCH"
)
#: An evidence line is cut to this many characters (Spark appends the query's plan to its errors).
EVIDENCE_CHARS = 300


def _causes(lines: list[str], limit: int = 3) -> list[str]:
    """The error lines of a stack trace cut to their causes: no ``Traceback`` headers or frames, each line once
    and at most ``EVIDENCE_CHARS`` long, the newest ``limit``."""
    found: list[str] = []
    for line in lines:
        text = line.strip()
        if not text or text.startswith(("Traceback", "at ", "File ")):
            continue
        text = text[:EVIDENCE_CHARS]
        if text not in found:
            found.append(text)
    return found[-limit:]


def _failed(symptoms: Symptoms) -> dict[str, Any] | None:
    status = symptoms.status
    if status is None or status.state != "failed":
        return None
    return {
        "diagnosis": "failed",
        "summary": f"the driver failed after its query ran: {status.error or 'no error recorded'}",
        "cure": "a synchronous restart is safe: fix what the error says and deploy again",
        "evidence": symptoms.status_lines()
        + [f"driver log: {line}" for line in _causes(symptoms.log_lines("error", limit=20))],
    }
