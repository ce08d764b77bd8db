"""Where a page of jobs, ``list`` and a job name find jobs: fleet indexes (every job a rollout deployed) and
checkpoint folders (every direct sub-folder with a control area beside it), on storage every host reads; never
one host's registry. The provider's ``[async_stream]`` settings name them, so every host answers the same.

A source that cannot be read is a row saying so, never an exception: one broken index must not hide the rest.
The settings themselves are another matter: when they cannot be read, that is an error, never "none set".
"""

from __future__ import annotations

import os
import posixpath
from dataclasses import dataclass
from typing import Any

from airflow_async_stream.exceptions import AsyncStreamError, SettingsError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import RETIRED, FleetIndex
from airflow_async_stream.state.records import SUFFIX
from airflow_async_stream.state.storage import open_url

__all__ = ["OPTIONS", "SECTION", "Found", "configured", "find_jobs", "named", "once_each", "split_setting"]

#: The provider's config section (get_provider_info() documents its options), and the options naming sources.
SECTION = "async_stream"
OPTIONS = ("fleet_indexes", "checkpoint_folders")


@dataclass(frozen=True)
class Found:
    """One job where a source names it, or (``error`` set) a source that could not be read."""

    name: str
    checkpoint: str
    control_area: str
    source: str
    retired: bool = False
    error: str | None = None


def split_setting(value: str | None) -> list[str]:
    """A comma-separated setting's items, stripped, empty ones left out."""
    return [item.strip() for item in (value or "").split(",") if item.strip()]


def _from_index(url: str, remembered: dict[str, Any] | None = None) -> list[Found]:
    """The jobs of the fleet index at ``url``: one listing; ``remembered``, the entries read before (a watcher's,
    kept between sweeps): only entries rewritten since are read."""
    source = f"fleet index {url}"
    index = FleetIndex(url)
    listed = index.entries(remembered)
    if not listed and not index.fs.exists(index.root):
        raise FileNotFoundError(f"no fleet index at {url}")
    found = []
    for name, entry in listed:
        if isinstance(entry, Exception):
            found.append(Found(name, "", "", source, error=f"its index entry cannot be read: {entry}"))
        elif entry is not None:
            found.append(Found(entry.job, entry.checkpoint, entry.control_area, source, entry.state == RETIRED))
    return found


def _from_folder(url: str) -> list[Found]:
    fs, root = open_url(url)
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


def find_jobs(
    fleet_indexes: list[str], checkpoint_folders: list[str], remembered: dict[str, Any] | None = None
) -> list[Found]:
    """Every job the sources name, each control area once (the first source to name it wins). ``remembered``
    (a watcher's, kept between sweeps): each fleet index's entries as read before, read again only when
    rewritten."""
    found: list[Found] = []
    for url in _absolute_urls(fleet_indexes):
        try:
            found += _from_index(url, None if remembered is None else remembered.setdefault(url, {}))
        except (AsyncStreamError, OSError, ValueError) as exc:
            found.append(Found(url, "", "", f"fleet index {url}", error=f"the fleet index cannot be read: {exc}"))
    for url in _absolute_urls(checkpoint_folders):
        try:
            found += _from_folder(url)
        except (AsyncStreamError, OSError, ValueError) as exc:
            found.append(
                Found(url, "", "", f"checkpoint folder {url}", error=f"the checkpoint folder cannot be read: {exc}")
            )
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


def configured() -> dict[str, list[str]] | None:
    """The ``[async_stream]`` fleet indexes and checkpoint folders; None where Airflow is not installed (there
    are no settings to read). Settings that cannot be read raise SettingsError, never read as "none set"."""
    try:
        from airflow.configuration import conf
    except ModuleNotFoundError as exc:
        if exc.name != "airflow":
            raise _unreadable(exc) from exc
        return None
    except Exception as exc:  # noqa: BLE001 - a broken airflow.cfg fails at import: said, never "none set"
        raise _unreadable(exc) from exc
    try:
        return {option: split_setting(conf.get(SECTION, option, fallback="")) for option in OPTIONS}
    except Exception as exc:  # noqa: BLE001 - e.g. a *_cmd setting whose command fails
        raise _unreadable(exc) from exc


def _unreadable(exc: Exception) -> SettingsError:
    said = " ".join(str(exc).split())  # configparser's messages run over lines: one line, as every error here
    return SettingsError(f"the [{SECTION}] settings cannot be read: {type(exc).__name__}: {said}")


def _recorded_name(found: Found) -> str | None:
    try:
        deployment = ControlArea(found.control_area).read_deployment()
    except (AsyncStreamError, OSError, ValueError):
        return None  # its row says why; a name lookup skips it
    return deployment.job if deployment else None


def _absolute_urls(urls: list[str]) -> list[str]:
    return [u if "://" in u else os.path.abspath(u) for u in urls]


def named(name: str, fleet_indexes: list[str], checkpoint_folders: list[str]) -> list[Found]:
    """The jobs ``name`` names in these sources, each once: an index's entry of that name, a folder's ``name``
    sub-folder with a control area; else any job of the folders deployed under that name. Unreadable sources
    are kept as ``Found`` with ``error``, so a caller finding nothing can say which it could not read."""
    found: list[Found] = []
    for url in _absolute_urls(fleet_indexes):
        try:
            entry = FleetIndex(url).lookup(name)
        except (AsyncStreamError, OSError, ValueError) as exc:
            found.append(Found(url, "", "", f"fleet index {url}", error=f"the fleet index cannot be read: {exc}"))
            continue
        if entry is not None:
            found.append(
                Found(entry.job, entry.checkpoint, entry.control_area, f"fleet index {url}", entry.state == RETIRED)
            )
    for url in _absolute_urls(checkpoint_folders):
        base = url.rstrip("/")
        try:
            if ControlArea(f"{base}/{name}{SUFFIX}").exists():
                found.append(Found(name, f"{base}/{name}", f"{base}/{name}{SUFFIX}", f"checkpoint folder {url}"))
        except OSError as exc:
            found.append(
                Found(url, "", "", f"checkpoint folder {url}", error=f"the checkpoint folder cannot be read: {exc}")
            )
    if not [job for job in found if not job.error]:  # a folder's job may carry another name than its folder's
        failed = {job.source for job in found if job.error}
        listed = find_jobs([], checkpoint_folders)
        found += [
            job
            for job in listed
            if (job.error and job.source not in failed) or (not job.error and _recorded_name(job) == name)
        ]
    return once_each(found)
