"""Where a page of jobs finds them: fleet indexes (every job a rollout deployed) and checkpoint folders (every
direct sub-folder with a control area beside it), on storage every host reads; never one host's registry.

A source that cannot be read is a row saying so, never an exception: one broken index must not hide the rest.
"""

from __future__ import annotations

import os
import posixpath

import fsspec

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.insight.overview import Found
from airflow_async_stream.rollout.fleet import RETIRED, FleetIndex
from airflow_async_stream.state.records import SUFFIX

__all__ = ["find_jobs", "once_each", "split_setting"]


def split_setting(value: str | None) -> list[str]:
    """A comma-separated setting's items, stripped, empty ones left out."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _from_index(url: str) -> list[Found]:
    source = f"fleet index {url}"
    index = FleetIndex(url)
    if not index.fs.exists(index.root):
        raise FileNotFoundError(f"no fleet index at {url}")
    found = []
    for name in index.names():
        try:
            entry = index.lookup(name)
        except (AsyncStreamError, OSError, ValueError) as exc:
            found.append(Found(name, "", "", source, error=f"its index entry cannot be read: {exc}"))
            continue
        if entry is not None:
            found.append(Found(entry.job, entry.checkpoint, entry.control_area, source, entry.state == RETIRED))
    return found


def _from_folder(url: str) -> list[Found]:
    fs, root = fsspec.core.url_to_fs(url)
    if not fs.isdir(root):
        raise FileNotFoundError(f"no folder at {url}")
    base = url.rstrip("/")
    found = []
    for entry in sorted(fs.ls(root, detail=True), key=lambda e: str(e["name"])):
        name = posixpath.basename(str(entry["name"]).rstrip("/"))
        if entry.get("type") == "directory" and name.endswith(SUFFIX) and len(name) > len(SUFFIX):
            job = name.removesuffix(SUFFIX)
            found.append(Found(job, f"{base}/{job}", f"{base}/{name}", f"checkpoint folder {url}"))
    return found


def find_jobs(fleet_indexes: list[str], checkpoint_folders: list[str]) -> list[Found]:
    """Every job the sources name, each control area once (the first source to name it wins)."""
    found: list[Found] = []
    for kind, reader, urls in (("fleet index", _from_index, fleet_indexes), ("checkpoint folder", _from_folder, checkpoint_folders)):  # fmt: skip
        for url in (u if "://" in u else os.path.abspath(u) for u in urls):
            try:
                found += reader(url)
            except (AsyncStreamError, OSError, ValueError) as exc:
                found.append(Found(url, "", "", f"{kind} {url}", error=f"the {kind} cannot be read: {exc}"))
    return once_each(found)


def once_each(found: list[Found]) -> list[Found]:
    """Each control area once, the first to name it kept (errors all kept)."""
    seen: set[str] = set()
    unique = []
    for job in found:
        if job.error or job.control_area not in seen:
            unique.append(job)
            seen.add(job.control_area)
    return unique
