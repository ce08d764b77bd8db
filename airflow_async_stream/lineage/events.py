"""OpenLineage's terms for a streaming job: its facets and its run events. Imports the OpenLineage client (the
``openlineage`` extra), so only the Airflow side's lineage module and a driver whose RUNNING events are on load it."""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Any

from attrs import define
from openlineage.client.event_v2 import InputDataset, Job, OutputDataset, Run, RunEvent, RunState
from openlineage.client.facet_v2 import JobFacet, RunFacet, error_message_run, job_type_job, parent_run

from airflow_async_stream import __version__
from airflow_async_stream.lineage.datasets import Dataset

__all__ = [
    "JOB_FACET",
    "PROGRESS_FACET",
    "AsyncStreamConfigurationJobFacet",
    "AsyncStreamProgressRunFacet",
    "run_event",
    "schema_url",
]

#: The facets' keys in an event (``job.facets``, ``run.facets``): OpenLineage's ``{prefix}_{name}`` for custom facets.
JOB_FACET = "asyncStream_configuration"
PROGRESS_FACET = "asyncStream_progress"
PRODUCER = f"https://pypi.org/project/airflow-async-stream/{__version__}"
#: Where the facets' JSON schemas are published: the tag of the release that first ships this version of them
#: (OpenLineage asks of a custom facet's ``_schemaURL`` an immutable URL, one per version of the schema; a release
#: that changes a schema moves this to its own tag). The same files ship in the package (lineage/facets/).
SCHEMAS_TAG = "v0.2.0"
_SCHEMAS = f"https://raw.githubusercontent.com/airflow-async-stream/airflow-async-stream/{SCHEMAS_TAG}"
SCHEMA_FOLDER = "airflow_async_stream/lineage/facets"


def schema_url(facet: str) -> str:
    """The ``_schemaURL`` of one of this project's facets (a JSON pointer into its published schema)."""
    return f"{_SCHEMAS}/{SCHEMA_FOLDER}/{facet}.json#/$defs/{facet}"


@define
class AsyncStreamConfigurationJobFacet(JobFacet):
    """How the streaming job runs: async progress settings, trigger, formats and plain options (no secrets)."""

    job: str
    checkpoint: str
    async_progress: dict[str, Any]
    trigger: dict[str, Any]
    stateful: bool
    source: dict[str, Any] | None = None
    sink: dict[str, Any] | None = None
    application: str | None = None

    @staticmethod
    def _get_schema() -> str:
        return schema_url("AsyncStreamConfigurationJobFacet")


@define
class AsyncStreamProgressRunFacet(RunFacet):
    """What the running job did since the previous event: micro-batches, rows, batch latency."""

    batches: int
    rows: int
    latency_ms_p50: float | None
    latency_ms_max: float | None
    last_batch_id: int | None
    since: str
    until: str

    @staticmethod
    def _get_schema() -> str:
        return schema_url("AsyncStreamProgressRunFacet")


def new_run_id() -> str:
    """A UUIDv7 (OpenLineage's recommended run id), from the OpenLineage client where it has one."""
    try:
        from openlineage.client.uuid import generate_new_uuid

        return str(generate_new_uuid())
    except ImportError:  # pragma: no cover - every client this extra installs has it
        return str(uuid.uuid4())


def _parent(parent: dict[str, str]) -> parent_run.ParentRunFacet:
    root = None
    if parent.get("root_run_id") and parent.get("root_job_name"):
        root = parent_run.Root(
            run=parent_run.RootRun(runId=parent["root_run_id"]),
            job=parent_run.RootJob(namespace=parent["namespace"], name=parent["root_job_name"]),
        )
    return parent_run.ParentRunFacet(
        run=parent_run.Run(runId=parent["run_id"]),
        job=parent_run.Job(namespace=parent["namespace"], name=parent["job_name"]),
        root=root,
    )


def run_event(
    state: str,
    *,
    namespace: str,
    job_name: str,
    run_id: str,
    parent: dict[str, str] | None = None,
    configuration: dict[str, Any] | None = None,
    datasets: tuple[list[Dataset], list[Dataset]] = ([], []),
    progress: dict[str, Any] | None = None,
    error: str | None = None,
) -> RunEvent:
    """One run event of the streaming job (``state``: START, RUNNING, COMPLETE or FAIL)."""
    run_facets: dict[str, RunFacet] = {}
    if parent:
        run_facets["parent"] = _parent(parent)
    if progress is not None:
        run_facets[PROGRESS_FACET] = AsyncStreamProgressRunFacet(**progress, producer=PRODUCER)
    if error is not None:
        run_facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(message=error, programmingLanguage="python")
    job_facets: dict[str, JobFacet] = {
        "jobType": job_type_job.JobTypeJobFacet(processingType="STREAMING", integration="SPARK", jobType="JOB"),
    }
    if configuration is not None:
        job_facets[JOB_FACET] = AsyncStreamConfigurationJobFacet(**configuration, producer=PRODUCER)
    inputs, outputs = datasets
    return RunEvent(
        eventType=getattr(RunState, state),
        eventTime=datetime.now(UTC).isoformat(),
        run=Run(runId=run_id, facets=run_facets),
        job=Job(namespace=namespace, name=job_name, facets=job_facets),
        producer=PRODUCER,
        inputs=[InputDataset(namespace=d.namespace, name=d.name) for d in inputs],
        outputs=[OutputDataset(namespace=d.namespace, name=d.name) for d in outputs],
    )
