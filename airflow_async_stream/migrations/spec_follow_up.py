"""After the migration: which spec file still turns async progress tracking on, and what to change in it.

The migration changes what runs, never the user's files. A spec file that still says
``async_progress: {enabled: true}`` turns async back on at the next deploy from it (a rollout of its desired
folder plans that as a restart "async progress tracking turned on"). So the migration's last step names each
file that still says so. No Airflow import; nothing here writes anything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_async_stream.exceptions import ControlAreaError, SpecError
from airflow_async_stream.spec.folder import spec_files
from airflow_async_stream.spec.load import read_spec_file
from airflow_async_stream.state.control import ControlArea

__all__ = ["SpecFileCheck", "spec_follow_up"]

_ON = "async_progress.enabled: true"


@dataclass(frozen=True)
class SpecFileCheck:
    """One place the job's spec comes from, whether it still turns async on, and what to do about it."""

    file: str | None
    async_on: bool | None  # None: the file could not be read
    advice: str

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "async_progress_enabled": self.async_on, "advice": self.advice}


def _async_on(data: Any) -> bool:
    settings = data.get("async_progress") if isinstance(data, dict) else None
    return bool(settings.get("enabled")) if isinstance(settings, dict) else False


def _check_file(path: Path, next_deploy: str, overrides: dict[str, Any]) -> SpecFileCheck:
    try:
        on = _async_on(read_spec_file(path))
    except SpecError as exc:
        return SpecFileCheck(
            str(path),
            None,
            f"{path} could not be read to check it ({exc}): make sure it says "
            f"async_progress.enabled: false, or {next_deploy} may turn async back on",
        )
    carry = f"; also carry the migration's sync_overrides ({', '.join(sorted(overrides))}) into it" if overrides else ""
    if on:
        return SpecFileCheck(
            str(path),
            True,
            f"{path} still says {_ON}: set it to false (or remove async_progress: "
            f"off is Spark's default), or {next_deploy} turns async progress tracking back on{carry}",
        )
    return SpecFileCheck(str(path), False, f"{path} already says async progress off{carry}")


def _desired_file(folder: Path, job: str) -> Path | None:
    """The file of ``job`` in a rollout's desired folder (None when it is gone); OSError when the folder cannot
    be read here."""
    for path in spec_files(folder):
        try:
            data = read_spec_file(path)
        except SpecError:
            continue
        if isinstance(data, dict) and data.get("name") == job:
            return path
    return None


def _check_rollout_folder(folder: Path, job: str, overrides: dict[str, Any]) -> SpecFileCheck:
    """The job's file in the desired folder of the rollout that deployed it."""
    next_rollout = f"the next rollout of {folder}"
    try:
        found = _desired_file(folder, job)
    except OSError as exc:
        return SpecFileCheck(
            None,
            None,
            f"{job} was deployed by a rollout of {folder}, which cannot be read here "
            f"({exc.strerror or exc}): make sure its file there says async_progress.enabled: false, "
            f"or {next_rollout} turns async progress tracking back on",
        )
    if found is None:
        return SpecFileCheck(
            None,
            None,
            f"{job} was deployed by a rollout of {folder}, which holds no file for it "
            f"now: {next_rollout} retires it unless its file comes back saying "
            "async_progress.enabled: false",
        )
    return _check_file(found, next_rollout, overrides)


def spec_follow_up(
    job: str, spec_file: str | None, control: ControlArea, sync_overrides: dict[str, Any] | None = None
) -> list[SpecFileCheck]:
    """Where the job's spec comes from (the migration's spec file; a rollout's desired folder that deployed it)
    and, for each, whether it still turns async on and what to change."""
    overrides = sync_overrides or {}
    checks = []
    try:  # advice only: a record that cannot be read is said so, never fails the migration that succeeded
        folder = (control.read_json(ControlArea.ROLLOUT) or {}).get("folder")
    except (ControlAreaError, OSError) as exc:
        folder = None
        checks.append(
            SpecFileCheck(
                None,
                None,
                f"could not tell whether a rollout deployed {job} ({exc}): if one "
                "did, its file in the rollout's folder must say async_progress.enabled: false",
            )
        )
    if folder:
        checks.append(_check_rollout_folder(Path(folder), job, overrides))
    if spec_file and not any(c.file and Path(c.file).resolve() == Path(spec_file).resolve() for c in checks):
        checks.append(_check_file(Path(spec_file), "the next deploy from this file", overrides))
    if not checks:
        checks.append(
            SpecFileCheck(
                None,
                None,
                "the job's spec was given in the DAG, not in a file: set "
                "async_progress.enabled to false where it is defined, or the next deploy of "
                "it turns async progress tracking back on",
            )
        )
    return checks
