"""The fleet index: the jobs a rollout of one desired folder deployed, on storage every worker reaches.

A job whose file leaves the folder, or whose checkpoint moves in its file, can no longer be found from the
folder; the rollout finds it here, from any worker or pod. The folder names its index in ``_fleet.yaml``::

    index: s3://bucket/streaming/fleet-index       # an absolute path or any fsspec URL; ${VAR} expands

Layout of the index (one small JSON file per job, so parallel rollout steps never write the same file):

``jobs/<name>.json``  the job's control area and checkpoint, ``active`` or ``retired`` (by which run)
``gone/<name>.json``  retired jobs a rollout has listed once more as retired: plans read them no more

An entry is written before the rollout changes its job (so a worker that dies mid-deploy leaves the job
findable) and never removed, only moved to ``gone/``. One index serves one folder.
"""

from __future__ import annotations

import json
import posixpath
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Self

from airflow_async_stream.exceptions import AsyncStreamError, ControlAreaError, DesiredStateError, SpecError
from airflow_async_stream.spec.folder import FLEET_FILE
from airflow_async_stream.spec.load import read_spec_file
from airflow_async_stream.state.records import SUFFIX, now
from airflow_async_stream.state.storage import make_folder, open_url, read_json_object, replace_file

__all__ = ["ACTIVE", "FLEET_FILE", "RETIRED", "FleetEntry", "FleetIndex"]

#: The file of a desired folder that names its fleet index (never read as a job spec).
ACTIVE, RETIRED = "active", "retired"
_FORMAT = 1


@dataclass(frozen=True)
class FleetEntry:
    """One job a rollout deployed: where its control area is, and whether a rollout retired it."""

    job: str
    control_area: str
    state: str = ACTIVE
    updated_at: float = 0.0
    run_id: str | None = None
    retired_at: float | None = None
    format: int = _FORMAT

    @property
    def checkpoint(self) -> str:
        return self.control_area.removesuffix(SUFFIX)

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "checkpoint": self.checkpoint}

    @classmethod
    def from_json(cls, data: dict[str, Any], where: str) -> Self:
        if not isinstance(data.get("job"), str) or not isinstance(data.get("control_area"), str):
            raise ControlAreaError(f"{where} is not a fleet index entry (it needs `job` and `control_area`)")
        known = {"job", "control_area", "state", "updated_at", "run_id", "retired_at", "format"}
        return cls(**{key: value for key, value in data.items() if key in known})


def _version(item: dict[str, Any]) -> Any:
    """What changes when a listed file is rewritten: the store's ETag, else its time and size (None: unknown)."""
    etag = item.get("ETag") or item.get("etag")
    if etag:
        return str(etag)
    mtime = item.get("mtime") or item.get("LastModified") or item.get("last_modified") or item.get("created")
    return (str(mtime), item.get("size")) if mtime is not None else None


class FleetIndex:
    """The index at ``url`` (see the module docstring)."""

    JOBS, GONE = "jobs", "gone"

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.fs, self.root = open_url(self.url)

    @classmethod
    def for_folder(cls, folder: str | Path) -> Self:
        """The index ``_fleet.yaml`` of ``folder`` names; DesiredStateError naming the field when it cannot."""
        path = Path(folder) / FLEET_FILE
        where = str(folder)
        if not path.is_file():
            raise DesiredStateError(
                where,
                [
                    (
                        FLEET_FILE,
                        "(file)",
                        "missing: a rollout keeps the index of the jobs it deployed on storage "
                        "every worker reaches; name it here, e.g. `index: s3://bucket/streaming/fleet-index`",
                    )
                ],
            )
        try:
            data = read_spec_file(path)
        except SpecError as exc:
            raise DesiredStateError(where, [(FLEET_FILE, field, reason) for field, reason in exc.problems]) from None
        problems = []
        if not isinstance(data, dict):
            problems.append(("(file)", "must be a mapping with the key `index`"))
        else:
            problems += [(str(key), "unknown key: only `index` is read here") for key in data if key != "index"]
            index = data.get("index")
            if not isinstance(index, str) or not index.strip():
                problems.append(("index", "required: the path or URL of the fleet index"))
            elif "://" not in index and not index.startswith("/"):
                problems.append(
                    (
                        "index",
                        f"{index!r} is relative: give an absolute path or a URL that every "
                        "worker reaches (a relative path depends on the worker's directory)",
                    )
                )
        if problems:
            raise DesiredStateError(where, [(FLEET_FILE, field, reason) for field, reason in problems])
        assert isinstance(data, dict)
        return cls(str(data["index"]))

    def _path(self, folder: str, job: str) -> str:
        return posixpath.join(self.root, folder, f"{job}.json")

    def names(self, folder: str = JOBS) -> list[str]:
        """The jobs of ``jobs/`` (or ``gone/``): one listing, no file read."""
        where = posixpath.join(self.root, folder)
        self.fs.invalidate_cache(where)  # object stores' clients cache listings; another worker may have written
        try:
            listed = self.fs.ls(where, detail=False)
        except FileNotFoundError:
            return []
        names = (posixpath.basename(str(p)) for p in listed)
        return sorted(n[: -len(".json")] for n in names if n.endswith(".json") and not n.startswith("."))

    def entries(self, remembered: dict[str, tuple[Any, FleetEntry]] | None = None) -> list[tuple[str, Any]]:
        """Every job of ``jobs/`` with its entry (or the error reading it), from one listing; with
        ``remembered`` (kept by the caller between calls), only entries whose listing changed are read."""
        where = posixpath.join(self.root, self.JOBS)
        try:
            listed = self.fs.ls(where, detail=True)
        except FileNotFoundError:
            listed = []
        found: list[tuple[str, Any]] = []
        for item in sorted(listed, key=lambda i: str(i["name"])):
            base = posixpath.basename(str(item["name"]))
            if not base.endswith(".json") or base.startswith("."):
                continue
            job, version = base[: -len(".json")], _version(item)
            known = remembered.get(job) if remembered is not None else None
            if known is not None and version is not None and known[0] == version:
                found.append((job, known[1]))
                continue
            try:
                entry = self.lookup(job)
            except (AsyncStreamError, OSError, ValueError) as exc:
                found.append((job, exc))
                continue
            if entry is not None and remembered is not None:
                remembered[job] = (version, entry)
            found.append((job, entry))
        if remembered is not None:
            for gone in set(remembered) - {job for job, _ in found}:
                del remembered[gone]
        return found

    def lookup(self, job: str) -> FleetEntry | None:
        where = f"{self.url}/{self.JOBS}/{job}.json"
        data = read_json_object(self.fs, self._path(self.JOBS, job), where)
        return None if data is None else FleetEntry.from_json(data, where)

    def _write(self, folder: str, entry: FleetEntry) -> None:
        make_folder(self.fs, posixpath.join(self.root, folder))
        replace_file(self.fs, self._path(folder, entry.job), json.dumps(entry.to_json(), indent=2).encode())

    def record_active(self, job: str, control_area: str, run_id: str | None) -> None:
        """The rollout is about to change (or adopts) ``job`` whose control area is ``control_area``."""
        current = self.lookup(job)
        if current and current.state == ACTIVE and current.control_area == control_area.rstrip("/"):
            return  # already so: one read, no write
        self._write(self.JOBS, FleetEntry(job, control_area.rstrip("/"), ACTIVE, now(), run_id))

    def record_retired(self, job: str, control_area: str, run_id: str | None) -> None:
        """A rollout stopped ``job`` because its file left the folder."""
        at = now()
        self._write(self.JOBS, FleetEntry(job, control_area.rstrip("/"), RETIRED, at, run_id, retired_at=at))

    def forget(self, job: str) -> None:
        """``job`` has been listed once more after it was retired (or had nothing left to run): move its entry
        to ``gone/``, where plans no longer read it (kept, not deleted: the fleet's history)."""
        entry = self.lookup(job)
        if entry is None:
            return
        self._write(self.GONE, entry)
        try:
            self.fs.rm_file(self._path(self.JOBS, job))
        except FileNotFoundError:
            pass
