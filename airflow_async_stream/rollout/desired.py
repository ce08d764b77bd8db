"""Desired state: a folder of job spec files, one job per file, validated as a whole; a field a file delegates
to the tuner (``auto``) is desired at the value the job runs with, so a rollout never reverts the tuner."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_async_stream.exceptions import DesiredStateError, SpecError
from airflow_async_stream.spec.folder import spec_files
from airflow_async_stream.spec.load import deep_merge, parse_spec, read_spec_file
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.tracking import carry_tuned
from airflow_async_stream.state.fleet import FleetIndex

__all__ = ["ASYNC_RULE_FIELDS", "DesiredJob", "load_desired", "load_folder", "spec_files", "tuned_target"]

#: Fields whose rules refuse async progress tracking: a file breaking only these wants async off.
ASYNC_RULE_FIELDS = frozenset(
    {"trigger.once", "trigger.available_now", "trigger.continuous", "trigger.real_time", "sink.format", "stateful"}
)


@dataclass(frozen=True)
class DesiredJob:
    """One job as its file describes it; ``async_forced_off`` says why async was turned off for it."""

    spec: JobSpec
    file: str
    async_forced_off: tuple[str, ...] = ()
    #: When the file was last written (a ``state: running`` written after a person's stop resumes the job).
    modified_at: float | None = None


def load_desired(folder: str | Path) -> dict[str, DesiredJob]:
    """Every job of the folder by name; DesiredStateError listing every problem of every file."""
    root = Path(folder)
    if root.is_file():
        raise DesiredStateError(
            str(root),
            [
                (
                    "(folder)",
                    "(folder)",
                    f"is a file, not a folder: give the folder of spec files (one per job) it sits in, {root.parent}",
                )
            ],
        )
    if not root.is_dir():
        raise DesiredStateError(str(root), [("(folder)", "(folder)", "does not exist")])
    problems: list[tuple[str, str, str]] = []
    jobs: dict[str, DesiredJob] = {}
    checkpoints: dict[str, str] = {}
    for path in spec_files(root):
        try:
            job = _load_one(path)
        except SpecError as exc:
            problems += [(path.name, field, reason) for field, reason in exc.problems]
            continue
        name, checkpoint = job.spec.name, job.spec.checkpoint.rstrip("/")
        if name in jobs:
            problems.append((path.name, "name", f"{name!r} is also the job of {jobs[name].file}: one job per name"))
            continue
        clash = _clash(checkpoint, checkpoints)
        if clash:
            problems.append((path.name, "checkpoint", clash))
            continue
        jobs[name] = job
        checkpoints[checkpoint] = path.name
    if problems:
        raise DesiredStateError(str(root), problems)
    return jobs


def _clash(checkpoint: str, known: dict[str, str]) -> str | None:
    """Why ``checkpoint`` is, holds or sits inside another file's checkpoint (a folder of this host judged by its
    real path: a symlink is the folder it names), or None. Inside a control area the spec refuses already."""
    if checkpoint in known:
        return f"{checkpoint} is also the checkpoint of {known[checkpoint]}"
    mine = _real(checkpoint)
    for other, file in known.items():
        theirs = _real(other)
        if mine == theirs:
            return f"{checkpoint} is {other}, the checkpoint of {file}"
        if mine.startswith(theirs + "/"):
            return f"{checkpoint} is inside {other}, the checkpoint of {file}"
        if theirs.startswith(mine + "/"):
            return f"{checkpoint} holds {other}, the checkpoint of {file}"
    return None


def _real(checkpoint: str) -> str:
    return checkpoint if "://" in checkpoint else os.path.realpath(checkpoint)


def load_folder(folder: str | Path) -> tuple[dict[str, DesiredJob], FleetIndex]:
    """The folder's jobs and the fleet index its ``_fleet.yaml`` names; one DesiredStateError listing every
    problem of both (bad specs, duplicate names or checkpoints, a bad fleet file), so one run shows them all."""
    if not Path(folder).is_dir():
        load_desired(folder)  # raises: the folder itself is the one problem
    problems: list[tuple[str, str, str]] = []
    try:
        jobs = load_desired(folder)
    except DesiredStateError as exc:
        problems += exc.problems
    try:
        index = FleetIndex.for_folder(folder)
    except DesiredStateError as exc:
        problems += exc.problems
    if problems:
        raise DesiredStateError(str(folder), problems)
    return jobs, index


def _load_one(path: Path) -> DesiredJob:
    data: Any = read_spec_file(path)
    modified_at = path.stat().st_mtime
    try:
        return DesiredJob(parse_spec(data, str(path)), path.name, modified_at=modified_at)
    except SpecError as exc:
        if not exc.problems or not all(field in ASYNC_RULE_FIELDS for field, _ in exc.problems):
            raise
        # Only async's own rules fail: the file wants a trigger or sink async cannot run with, so async goes off.
        spec = parse_spec(deep_merge(data, {"async_progress": {"enabled": False}}), str(path))
        forced_off = tuple(f"{field}: {reason}" for field, reason in exc.problems)
        return DesiredJob(spec, path.name, forced_off, modified_at)


def tuned_target(desired: dict[str, Any], deployed: dict[str, Any] | None) -> dict[str, Any]:
    """The desired spec with the tuner's values of the fields it delegates (a rollout never reverts the tuner),
    unless the file now asks for what those values cannot run with (then the file's default: async off)."""
    carried = carry_tuned(desired, deployed)
    if carried == desired:
        return desired
    try:
        return parse_spec(carried).to_mapping()
    except SpecError:
        return desired
