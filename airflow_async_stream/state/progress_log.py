"""The progress log: one JSON line per micro-batch, in whole segment files with a retention.

Segments live in the control area's ``progress/`` folder, named
``<deployment_id>-<n>-t<unix seconds of its first line>.jsonl`` (deployment ids start with their UTC time:
ordered by deployment id, then by number, they run oldest first). A segment takes at most ``SEGMENT_LINES`` lines and a quarter of the log's size
limit; on storage that can append (local disks, HDFS) lines are appended to it, on object stores it is
rewritten whole as it grows, at most once per ``logs.control_write_interval_s`` (the lines wait in memory). Whenever a segment is started, the oldest whole segments go while the log is
over its size, or once every line in them is older than its age limit (a segment's lines are all older than
the next segment's start), so the log never holds more than ``max_bytes``. The segment being written is
never removed.
"""

from __future__ import annotations

import json
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from airflow_async_stream.spec.logs import DEFAULT_PROGRESS_AGE_HOURS, DEFAULT_PROGRESS_BYTES, MAX_PROGRESS_BYTES
from airflow_async_stream.state.storage import read_file
from airflow_async_stream.state.typed import fits

__all__ = ["Area", "Retention", "Segment", "segments", "tail_events", "tail_of"]

SEGMENT_LINES = 200
SEGMENT_MAX_BYTES = 256 * 1024
#: What a reader takes in: one segment at most (a writer's hold a quarter of the log's size and a line), the
#: whole log at most (its newest segments; anything beyond was written by someone else, or by a driver at 1.25x).
SEGMENT_READ_BYTES = MAX_PROGRESS_BYTES // 4 + 1024 * 1024
READ_MAX_BYTES = MAX_PROGRESS_BYTES * 5 // 4
_NAME = re.compile(r"(?P<deployment>.+)-(?P<number>\d{6,})-t(?P<started>\d+)\.jsonl")


class Area(Protocol):
    """What the progress log needs of a control area (see control.py)."""

    fs: Any
    #: The folder of segments (names: control.py).
    PROGRESS: str

    def path(self, name: str) -> str: ...

    @property
    def appendable(self) -> bool: ...


@dataclass(frozen=True)
class Retention:
    """How much progress a job keeps: at most ``max_bytes``, nothing older than ``max_age_s``."""

    max_bytes: int = DEFAULT_PROGRESS_BYTES
    max_age_s: float = DEFAULT_PROGRESS_AGE_HOURS * 3600.0

    @property
    def segment_bytes(self) -> int:
        return min(SEGMENT_MAX_BYTES, self.max_bytes // 4)


@dataclass(frozen=True)
class Segment:
    """One file of the progress log: its name in the control area, its size, and what its name says."""

    name: str
    size: int
    deployment_id: str
    started_at: float


def segments(area: Area) -> list[Segment]:
    """Every segment of the progress log, oldest first (in name order)."""
    try:
        listed = area.fs.ls(area.path(area.PROGRESS), detail=True)
    except FileNotFoundError:
        listed = []
    numbered = []
    for entry in listed:
        base = posixpath.basename(str(entry["name"]))
        match = _NAME.fullmatch(base)
        if not match:
            continue  # not ours (an editor's swap file, a temp file)
        started = float(match["started"])
        segment = Segment(f"{area.PROGRESS}/{base}", int(entry.get("size") or 0), match["deployment"], started)
        numbered.append(((match["deployment"], int(match["number"])), segment))
    return [segment for _, segment in sorted(numbered, key=lambda pair: pair[0])]


def read_events(area: Area, files: list[Segment]) -> list[dict[str, Any]]:
    """The events of ``files`` in order, of the newest files ``READ_MAX_BYTES`` holds; a torn last line or a file
    removed meanwhile is skipped, a file over ``SEGMENT_READ_BYTES`` refused (ControlAreaError naming it)."""
    events = []
    for segment in _newest_within(files, READ_MAX_BYTES):
        try:
            raw = read_file(area.fs, area.path(segment.name), most=SEGMENT_READ_BYTES)
            text = raw.decode("utf-8", errors="replace")
        except FileNotFoundError:
            continue  # removed by the retention since it was listed
        events += _parsed(text.splitlines())
    return events


def _newest_within(files: list[Segment], most: int) -> list[Segment]:
    """The newest of ``files`` (oldest first) whose listed sizes add up to at most ``most``."""
    total, first = 0, len(files)
    while first > 0 and total + files[first - 1].size <= most:
        first -= 1
        total += files[first].size
    return files[first:]


def tail_events(area: Area, max_bytes: int) -> list[dict[str, Any]]:
    """The newest events, from about the last ``max_bytes`` of the log (newest files first, each read from an
    offset): a bounded read, whatever the log's size; the line cut at the start is dropped."""
    return _tail(area, [(segment.name, segment.size) for segment in segments(area)], max_bytes)


def tail_of(area: Area, files: list[dict[str, Any]], max_bytes: int) -> list[dict[str, Any]]:
    """As tail_events, from ``files`` (a status's ``progress_files``, oldest first) without listing the log:
    one request a file; with none named, the log is listed. Only the log's own files are read (the names come
    from a record on shared storage)."""
    if not files:
        return tail_events(area, max_bytes)
    named = [(str(f.get("name") or ""), int(f.get("bytes") or 0)) for f in files]
    return _tail(area, [(n, size) for n, size in named if _is_segment(area, n)], max_bytes)


def _is_segment(area: Area, name: str) -> bool:
    folder, base = posixpath.split(name)
    return folder == area.PROGRESS and _NAME.fullmatch(base) is not None


def _tail(area: Area, files: list[tuple[str, int]], max_bytes: int) -> list[dict[str, Any]]:
    chunks: list[list[dict[str, Any]]] = []
    left = max_bytes
    for name, size in reversed(files):
        if left <= 0:
            break
        start = max(0, size - left)
        try:
            data = read_file(area.fs, area.path(name), start or None)
        except FileNotFoundError:
            continue  # removed by the retention since it was listed or named
        left -= size
        lines = data.decode("utf-8", errors="replace").splitlines()
        chunks.append(_parsed(lines[1:] if start else lines))
    return [event for chunk in reversed(chunks) for event in chunk]


#: The fields of an event its readers rely on, by type: an event that breaks one (hand-written: the log sits on
#: shared storage) is skipped as a torn line is, so no reader meets a text where it counts batches.
EVENT_FIELDS: dict[str, Any] = {
    **dict.fromkeys(("deployment_id", "query_id", "query_run_id", "timestamp"), str | None),
    **dict.fromkeys(("batch_id", "num_input_rows"), int | None),
    **dict.fromkeys(("input_rows_per_s", "processed_rows_per_s", "offset_management_ms"), float | None),
    "duration_ms": dict[str, float],
    "sources": list[dict[str, Any]],
    "configuration": dict[str, Any] | None,
}


def _parsed(lines: list[str]) -> list[dict[str, Any]]:
    events = []
    for line in lines:
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):  # torn, a number past Python's limit, nested past the stack
            continue
        if isinstance(event, dict) and all(fits(event[k], t) for k, t in EVENT_FIELDS.items() if k in event):
            events.append(event)
    return events


def files_of(all_files: list[Segment], deployment_id: str | None) -> list[Segment]:
    """The segments of a deployment (all of them for None)."""
    if deployment_id is None:
        return all_files
    return [s for s in all_files if s.deployment_id == deployment_id]


def latest_event(
    area: Area, deployment_id: str, where: Callable[[dict[str, Any]], bool] | None = None
) -> dict[str, Any] | None:
    """A deployment's newest event (that ``where`` accepts), reading its segments newest first (usually one
    small file)."""
    for segment in reversed(files_of(segments(area), deployment_id)):
        mine = [
            e
            for e in read_events(area, [segment])
            if e.get("deployment_id") == deployment_id and (where is None or where(e))
        ]
        if mine:
            return mine[-1]
    return None
