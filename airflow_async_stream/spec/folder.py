"""A folder of job spec files, as a rollout, ``validate`` and the migration's follow-up read it."""

from __future__ import annotations

from pathlib import Path

__all__ = ["FLEET_FILE", "SPEC_SUFFIXES", "spec_files"]

SPEC_SUFFIXES = (".yaml", ".yml", ".json")
#: A desired folder's fleet settings (state/fleet.py): beside the job files, not a job.
FLEET_FILE = "_fleet.yaml"


def spec_files(folder: Path) -> list[Path]:
    """The folder's job files: YAML or JSON, not hidden, not the fleet file."""
    return sorted(
        p
        for p in folder.iterdir()
        if p.is_file() and p.suffix in SPEC_SUFFIXES and p.name[0] != "." and p.name != FLEET_FILE
    )
