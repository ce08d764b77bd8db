"""How a command names a job: by its name, a spec file, a checkpoint or a control area.

Every command that acts on one job (``status``, ``inspect``, ``report``, ``doctor``, ``stop``, ``release``,
``switch``) finds the job here, so they accept the same things. A job name is looked up in this host's registry,
then in the fleet indexes and checkpoint folders of the provider's ``[async_stream]`` settings (shared storage:
every host answers the same). A name that is neither a known job nor an existing checkpoint is a
``JobNotFoundError`` saying what was looked for where, never an empty answer: a typo must not read as "never
deployed" or "safe".
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.spec.folder import SPEC_SUFFIXES
from airflow_async_stream.spec.load import load_spec
from airflow_async_stream.state import registry, sources
from airflow_async_stream.state.checkpoint import looks_like_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import SUFFIX

__all__ = ["NamedJob", "JobNotFoundError", "control_for", "find_job"]


class JobNotFoundError(AsyncStreamError, LookupError):
    """A command names a job this tool cannot find."""


@dataclass(frozen=True)
class NamedJob:
    """One job's checkpoint and control area, and how the command named them."""

    checkpoint: str
    control: ControlArea
    named_by: str  # "job name", "spec file", "checkpoint" or "control area"
    #: The job's name when the command's words give it (a job name, a spec file), before any deploy.
    name: str | None = None


def _is_url(text: str) -> bool:
    return "://" in text


def _absolute(text: str) -> str:
    return text if _is_url(text) else os.path.abspath(text)


def _by_job_name(name: str) -> NamedJob:
    entry = registry.lookup(name)
    if entry is None and Path(name).is_dir():
        return _by_checkpoint(name)
    if entry is not None:
        control = ControlArea(entry["control_area"])
        return NamedJob(entry.get("checkpoint") or control.url[: -len(SUFFIX)], control, "job name", name)
    return _by_settings(name)


def _by_settings(name: str) -> NamedJob:
    """``name`` in the ``[async_stream]`` fleet indexes and checkpoint folders: the one job there, or why not."""
    settings = sources.configured()
    looked = f"this host's registry {registry.registry_dir()} (AIRFLOW_ASYNC_STREAM_HOME/jobs)"
    instead = "give the job's checkpoint or spec file instead"
    if settings is None:
        raise JobNotFoundError(
            f"no job named {name!r}: not in {looked}, and Airflow is not installed here to read "
            f"the [{sources.SECTION}] fleet indexes and checkpoint folders; {instead}"
        )
    where = settings["fleet_indexes"] + settings["checkpoint_folders"]
    if not where:
        raise JobNotFoundError(
            f"no job named {name!r} was deployed from this host: not in {looked}, and no [{sources.SECTION}] "
            f"fleet_indexes or checkpoint_folders are set to look in (the settings the streaming-jobs page reads, "
            f"which let every host find every job); {instead}"
        )
    found = sources.named(name, settings["fleet_indexes"], settings["checkpoint_folders"])
    jobs = [job for job in found if not job.error]
    if len(jobs) == 1:
        return NamedJob(jobs[0].checkpoint, ControlArea(jobs[0].control_area), "job name", name)
    if jobs:
        raise JobNotFoundError(
            f"{len(jobs)} jobs are named {name!r} in the [{sources.SECTION}] sources: give one's "
            "checkpoint instead: " + ", ".join(job.checkpoint for job in jobs)
        )
    unread = "".join(f"; {job.source}: {job.error}" for job in found)
    raise JobNotFoundError(
        f"no job named {name!r}: not in {looked}, nor in the [{sources.SECTION}] sources {', '.join(where)}"
        f"{unread}; {instead}"
    )


def _by_spec_file(path: str) -> NamedJob:
    if not Path(path).is_file():
        raise JobNotFoundError(f"no spec file at {_absolute(path)}")
    spec = load_spec(path)
    return NamedJob(spec.checkpoint, ControlArea.for_checkpoint(spec.checkpoint), "spec file", spec.name)


def _by_control_area(url: str) -> NamedJob:
    control = ControlArea(_absolute(url))
    if not control.exists():
        raise JobNotFoundError(
            f"no control area at {control.url}: no job was deployed on {control.url[: -len(SUFFIX)]}"
        )
    return NamedJob(control.url[: -len(SUFFIX)], control, "control area")


def _by_checkpoint(url: str) -> NamedJob:
    checkpoint = _absolute(url).rstrip("/")
    control = ControlArea.for_checkpoint(checkpoint)
    spark_wrote = looks_like_checkpoint(checkpoint)
    if spark_wrote or control.exists():
        return NamedJob(checkpoint, control, "checkpoint")
    if spark_wrote is None:
        raise JobNotFoundError(f"nothing at {checkpoint}: no checkpoint, and no job was deployed there")
    raise JobNotFoundError(
        f"{checkpoint} is not a Spark checkpoint (it holds no metadata, offsets/ or commits/) and no job was "
        f"deployed there (no {posixpath.basename(control.url)} beside it)"
    )


def find_job(text: str) -> NamedJob:
    """The job a command names; JobNotFoundError when it names nothing that exists."""
    if not text.strip():
        raise JobNotFoundError("no job named: give a job name, spec file, checkpoint or control area")
    if text.rstrip("/").endswith(SUFFIX):
        return _by_control_area(text.rstrip("/"))
    if Path(text).suffix in SPEC_SUFFIXES and not _is_url(text):
        return _by_spec_file(text)
    if "/" not in text and not _is_url(text):
        return _by_job_name(text)
    return _by_checkpoint(text)


def control_for(job: str) -> ControlArea:
    """A job name, a spec file, a checkpoint, or a control area: all lead to one control area ."""
    return find_job(job).control
