"""What a command-line target names: a job name, a spec file, a checkpoint or a control area.

Every command that acts on one job (``status``, ``inspect``, ``stop``, ``release``, ``switch``)
resolves its target here, so they accept the same things. A target that is neither a known job nor an
existing checkpoint is a ``TargetError`` saying what was looked for where, never an empty answer: a typo
must not read as "never deployed" or "safe".
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from pathlib import Path

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.spec.folder import SPEC_SUFFIXES
from airflow_async_stream.spec.load import load_spec
from airflow_async_stream.state import registry
from airflow_async_stream.state.checkpoint import looks_like_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import SUFFIX

__all__ = ["Target", "TargetError", "control_for", "resolve_target"]


class TargetError(AsyncStreamError, LookupError):
    """A command-line target names nothing this tool can find."""


@dataclass(frozen=True)
class Target:
    """One job's checkpoint and control area, and how the target named them."""

    checkpoint: str
    control: ControlArea
    named_by: str  # "job name", "spec file", "checkpoint" or "control area"


def _is_url(text: str) -> bool:
    return "://" in text


def _absolute(text: str) -> str:
    return text if _is_url(text) else os.path.abspath(text)


def _by_job_name(name: str) -> Target:
    entry = registry.lookup(name)
    if entry is None and Path(name).is_dir():
        return _by_checkpoint(name)
    if entry is None:
        raise TargetError(
            f"no job named {name!r} was deployed from this host: job names are looked up in "
            f"{registry.registry_dir()} (AIRFLOW_ASYNC_STREAM_HOME/jobs; set AIRFLOW_ASYNC_STREAM_HOME to the "
            "folder the deploying Airflow used), or give the job's checkpoint or spec file instead"
        )
    control = ControlArea(entry["control_area"])
    checkpoint = entry.get("checkpoint") or control.url[: -len(SUFFIX)]
    return Target(checkpoint, control, "job name")


def _by_spec_file(path: str) -> Target:
    if not Path(path).is_file():
        raise TargetError(f"no spec file at {_absolute(path)}")
    checkpoint = load_spec(path).checkpoint
    return Target(checkpoint, ControlArea.for_checkpoint(checkpoint), "spec file")


def _by_control_area(url: str) -> Target:
    control = ControlArea(_absolute(url))
    if not control.exists():
        raise TargetError(f"no control area at {control.url}: no job was deployed on {control.url[: -len(SUFFIX)]}")
    return Target(control.url[: -len(SUFFIX)], control, "control area")


def _by_checkpoint(url: str) -> Target:
    checkpoint = _absolute(url).rstrip("/")
    control = ControlArea.for_checkpoint(checkpoint)
    spark_wrote = looks_like_checkpoint(checkpoint)
    if spark_wrote or control.exists():
        return Target(checkpoint, control, "checkpoint")
    if spark_wrote is None:
        raise TargetError(f"nothing at {checkpoint}: no checkpoint, and no job was deployed there")
    raise TargetError(
        f"{checkpoint} is not a Spark checkpoint (it holds no metadata, offsets/ or commits/) and no job was "
        f"deployed there (no {posixpath.basename(control.url)} beside it)"
    )


def resolve_target(text: str) -> Target:
    """The job a command-line target names; TargetError when it names nothing that exists."""
    if not text.strip():
        raise TargetError("the target is empty: give a job name, spec file, checkpoint or control area")
    if text.rstrip("/").endswith(SUFFIX):
        return _by_control_area(text.rstrip("/"))
    if Path(text).suffix in SPEC_SUFFIXES and not _is_url(text):
        return _by_spec_file(text)
    if "/" not in text and not _is_url(text):
        return _by_job_name(text)
    return _by_checkpoint(text)


def control_for(target: str) -> ControlArea:
    """A job name, a spec file, a checkpoint, or a control area: all lead to one control area ."""
    return resolve_target(target).control
