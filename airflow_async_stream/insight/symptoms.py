"""What the doctor reads: the signs a job left in its checkpoint, status record, driver log and progress log.

Read-only. Works on a checkpoint without a control area (a job this project never deployed): then only the
checkpoint's files speak. The driver log is read from its end (rotated files included), at most
``LOG_LINES`` lines; the progress log from its newest files, at most about ``EVENTS`` events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from airflow_async_stream.driver.start import log_tail
from airflow_async_stream.insight.read import recent_events, recorded_spec
from airflow_async_stream.spec.logs import DEFAULT_DRIVER_LOG_FILES
from airflow_async_stream.state.checkpoint import Inspection, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import Deployment, Status

__all__ = ["Symptoms", "overlapping_runs", "read_symptoms", "stray_commits"]

#: How much of the driver log and the progress log the doctor reads (bounded whatever the job's age).
LOG_LINES = 5000
EVENTS = 5000

#: Spark's words for each sign, as its driver logs them (runtime/MicroBatchExecution.scala, HDFSMetadataLog).
SIGNS = {
    "batch_missing": re.compile(
        r"batch (\d+) doesn't exist|The offset log for batch (\d+) doesn't exist|Previous batch (\d+) not found"
    ),
    "second_writer": re.compile(
        r"Concurrent update to the (?:commit )?log\. Multiple streaming jobs detected|another query with same id|"
        r"Multiple streaming queries are concurrently using"  # when the other's offsets file is there first
    ),
    "error": re.compile(r"(?:Exception|Error)\b.*|Traceback"),
}


@dataclass
class Symptoms:
    """Everything the doctor judges from; a field is empty where its source does not exist."""

    checkpoint: str
    inspection: Inspection
    control_area: bool = False
    status: Status | None = None
    deployment: Deployment | None = None
    spec: dict[str, Any] | None = None
    live: bool = False
    events: list[dict[str, Any]] = field(default_factory=list)
    log: list[str] = field(default_factory=list)

    def log_lines(self, sign: str, limit: int = 3) -> list[str]:
        """The driver log's newest lines that show ``sign`` (a key of SIGNS), oldest first."""
        found = [line.strip() for line in self.log if SIGNS[sign].search(line)]
        return found[-limit:]

    @property
    def async_on(self) -> bool | None:
        """Whether the job was last deployed or switched with async on; None when nothing says."""
        configuration = (self.status.configuration if self.status else None) or {}
        settings = configuration.get("async_progress") or (self.deployment.async_progress if self.deployment else {})
        if not settings and self.spec:
            settings = self.spec.get("async_progress") or {"enabled": False}
        return None if not settings else bool(settings.get("enabled"))

    def status_lines(self) -> list[str]:
        """The status record in a line or two, as evidence."""
        if self.status is None:
            return ["no status record" if self.control_area else "no control area: a job this project never deployed"]
        lines = [f"status {self.status.state} (deployment {self.status.deployment_id}, {self.status.batches} batches)"]
        error = (self.status.error or "").strip().splitlines()
        return lines + ([f"status error: {error[0][:400]}"] if error else [])  # Spark appends the query's plan

    @property
    def name(self) -> str | None:
        return (self.spec or {}).get("name") or (self.deployment.job if self.deployment else None)


def read_symptoms(checkpoint: str, control: ControlArea) -> Symptoms:
    """The signs of one job; changes nothing anywhere."""
    symptoms = Symptoms(checkpoint, inspect_checkpoint(checkpoint, files_to_open=2))
    if not control.exists():
        return symptoms
    spec = recorded_spec(control)
    files = ((spec or {}).get("logs") or {}).get("driver_log_files") or DEFAULT_DRIVER_LOG_FILES
    status = control.read_status()
    symptoms.control_area, symptoms.spec, symptoms.status = True, spec, status
    symptoms.deployment = control.read_deployment()
    symptoms.live = liveness(status).live
    symptoms.events = recent_events(control, EVENTS)
    symptoms.log = log_tail(control, LOG_LINES, files).splitlines()
    return symptoms


def overlapping_runs(events: list[dict[str, Any]], key: str = "query_run_id") -> list[tuple[str, str]]:
    """Pairs of runs (or deployments, by ``key``) whose batches interleave in time: two writers at once.

    One driver's runs follow each other (a switch in place stops one query before it starts the next; a
    redeploy stops the old driver first), so a run that began while another still reported batches means
    two queries wrote the checkpoint together.
    """
    spans: dict[str, list[str]] = {}
    for event in events:
        run, at = event.get(key), event.get("timestamp")
        if isinstance(run, str) and isinstance(at, str):
            span = spans.setdefault(run, [at, at])
            span[0], span[1] = min(span[0], at), max(span[1], at)
    ordered = sorted(spans.items(), key=lambda item: item[1][0])
    pairs = []
    for i, (first, (_, first_end)) in enumerate(ordered):
        for second, (second_start, _) in ordered[i + 1 :]:
            if second_start < first_end:
                pairs.append((first, second))
    return pairs


def stray_commits(inspection: Inspection) -> list[int]:
    """Commit ids with no offsets file beside them, from the oldest offsets file on (older ones may be
    purged offsets): a commit Spark writes only after its batch's offsets."""
    offsets = set(inspection.offsets.ids)
    oldest = inspection.offsets.ids[0] if inspection.offsets.ids else None
    return [c for c in inspection.commits.ids if c not in offsets and (oldest is None or c >= oldest)]
