"""Read-only view of Spark's checkpoint: its offset and commit logs, and the verdict on a synchronous restart.

Nothing here writes. Only names that parse as integers are batch files; Spark's hidden temp files
(``.N.<uuid>.tmp``), Hadoop ``.crc`` files and ``N.compact`` files are skipped. Only the newest few files
are opened (their version header and metadata line), so a check stays cheap on a log of 100 000 files.

The verdict follows Spark's ``MicroBatchExecution`` (SPARK_FACTS.md): with N the newest batch in
``offsets/`` and M the newest in ``commits/``, a synchronous restart is safe only when ``offsets/N-1``
exists (for N > 0) and M is N or N-1.
"""

from __future__ import annotations

import json
import logging
import os
import posixpath
import re
from dataclasses import asdict, dataclass, field
from typing import Any

from fsspec.implementations.local import LocalFileSystem

from airflow_async_stream.exceptions import CheckpointReadError, UnsafeSyncRestartError
from airflow_async_stream.state.storage import open_url
from airflow_async_stream.waits import Log

__all__ = [
    "CHECKPOINT_MARKERS",
    "Inspection",
    "LogView",
    "batch_ids",
    "committed_since",
    "gate_sync_restart",
    "inspect_checkpoint",
    "latest_batch",
    "resume_point",
    "looks_like_checkpoint",
]

_log = logging.getLogger(__name__)

#: What Spark 3.5 to 4.3 write: offsets v2 (offsetLog.formatVersion=2), commits v2 (checkpointFormatVersion=2).
KNOWN_VERSIONS = {"offsets": {1, 2}, "commits": {1, 2}}
_VERSION_RE = re.compile(r"^v(\d+)$")
_SHOWN = 20  # newest ids and gaps shown in the summary


def _fs(checkpoint: str) -> tuple[Any, str]:
    fs, root = open_url(checkpoint)
    return fs, str(root)


def _list(fs: Any, folder: str) -> list[str] | None:
    """Base names in a folder, or None when it does not exist.

    Local folders are listed with ``os.listdir``: fsspec's local ``ls`` costs about 7x more per entry,
    which a sensor polling a 10 000-file commit log every second would pay on every poke.
    """
    try:
        if isinstance(fs, LocalFileSystem):
            return os.listdir(folder)
        return [posixpath.basename(p.rstrip("/")) for p in fs.ls(folder, detail=False)]
    except FileNotFoundError:
        return None
    except PermissionError as exc:
        raise CheckpointReadError(f"cannot list {folder}: permission denied") from exc
    except NotADirectoryError as exc:
        raise CheckpointReadError(f"{folder} is a file, not a folder") from exc


#: What Spark writes into a checkpoint folder: ``metadata`` when a query starts, ``offsets/`` and ``commits/``.
CHECKPOINT_MARKERS = frozenset({"metadata", "offsets", "commits"})


def looks_like_checkpoint(checkpoint: str) -> bool | None:
    """Whether the folder holds what Spark writes into a checkpoint; None when there is no folder there."""
    fs, root = _fs(checkpoint)
    names = _list(fs, root)
    return None if names is None else bool(CHECKPOINT_MARKERS.intersection(names))


def batch_ids(checkpoint: str, log: str) -> list[int]:
    """Sorted batch ids present in ``checkpoint/<log>`` (``offsets`` or ``commits``); empty if absent."""
    fs, root = _fs(checkpoint)
    names = _list(fs, posixpath.join(root, log)) or []
    return sorted(int(name) for name in names if name.isdigit())


def latest_batch(checkpoint: str, log: str) -> int | None:
    """The largest batch id in ``checkpoint/<log>``, or None when the log holds no batch."""
    ids = batch_ids(checkpoint, log)
    return ids[-1] if ids else None


def committed_since(commit_ids: list[int], baseline: int | None) -> int:
    """How many batches after ``baseline`` (None: from batch 0) count as committed.

    A batch counts once a durable commit at or after its id exists: that is what a restart resumes from.
    So the count is the newest commit id minus the baseline; files Spark purged (it keeps the newest
    ``minBatchesToRetain``, 100 by default) and the batches async mode never wrote change nothing.
    Every wait for committed batches counts this way.
    """
    if not commit_ids:
        return 0
    newest = commit_ids[-1]
    return newest + 1 if baseline is None else max(0, newest - baseline)


def resume_point(checkpoint: str) -> int | None:
    """The batch before the first one a query started now runs (None: it starts at batch 0).

    With N the newest offset and M the newest commit: N when M >= N (the query resumes at N + 1), else
    N - 1 (batch N runs again). A wait counted from here counts only batches the new query committed,
    even where async mode left the newest offset without its commit.
    """
    newest_offset = latest_batch(checkpoint, "offsets")
    newest_commit = latest_batch(checkpoint, "commits")
    if newest_offset is None:
        return newest_commit
    if newest_commit is not None and newest_commit >= newest_offset:
        return newest_offset
    return newest_offset - 1 if newest_offset > 0 else None


def _ranges(missing: list[int]) -> list[list[int]]:
    """[3, 4, 5, 9] -> [[3, 5], [9, 9]]: gaps stay short to report even in a sparse log."""
    out: list[list[int]] = []
    for i in missing:
        if out and out[-1][1] == i - 1:
            out[-1][1] = i
        else:
            out.append([i, i])
    return out


@dataclass
class LogView:
    """One of Spark's logs as found on storage."""

    present: bool
    ids: list[int] = field(default_factory=list)
    gaps: list[list[int]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    headers: dict[int, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    @property
    def latest(self) -> int | None:
        return self.ids[-1] if self.ids else None

    @property
    def missing_previous(self) -> int | None:
        """N-1 when the newest batch N > 0 has no file for N-1: what a synchronous restart dies on."""
        n = self.latest
        return n - 1 if n and (n - 1) not in self.ids[-2:] else None


def _read_log(fs: Any, root: str, log: str, ids_to_open: int) -> LogView:
    names = _list(fs, posixpath.join(root, log))
    if names is None:
        return LogView(present=False)
    ids = sorted(int(n) for n in names if n.isdigit())
    skipped = sorted(n for n in names if not n.isdigit())
    missing = sorted(set(range(ids[0], ids[-1] + 1)) - set(ids)) if ids else []
    view = LogView(present=True, ids=ids, gaps=_ranges(missing), skipped=skipped)
    for batch in ids[-ids_to_open:]:
        _check_file(fs, posixpath.join(root, log, str(batch)), log, batch, view)
    return view


def _check_file(fs: Any, path: str, log: str, batch: int, view: LogView) -> None:
    """Read a batch file's version header (and, for offsets, its metadata line); record problems."""
    try:
        with fs.open(path, "rb") as fh:
            head = fh.read(64 * 1024).decode("utf-8", errors="replace")
    except PermissionError:
        view.problems.append(f"{log}/{batch} cannot be read: permission denied")
        return
    lines = head.split("\n")
    header = lines[0].strip()
    view.headers[batch] = header
    match = _VERSION_RE.match(header)
    if not match:
        shown = header[:20] if header else "an empty file"
        view.problems.append(f"{log}/{batch} is corrupt: its first line should be a version like v1, found {shown!r}")
        return
    if int(match.group(1)) not in KNOWN_VERSIONS[log]:
        view.problems.append(
            f"{log}/{batch} has version {header}, which this checker does not know "
            f"(known: {', '.join(f'v{v}' for v in sorted(KNOWN_VERSIONS[log]))})"
        )
        return
    if len(lines) < 2 or not lines[1].strip():
        view.problems.append(f"{log}/{batch} is truncated: no metadata after the version line")
        return
    try:
        json.loads(lines[1])
    except json.JSONDecodeError:
        view.problems.append(f"{log}/{batch} is corrupt: its second line is not JSON")


@dataclass
class Inspection:
    """What the checkpoint holds and whether Spark could restart it synchronously."""

    checkpoint: str
    exists: bool
    offsets: LogView
    commits: LogView
    sync_restart_safe: bool
    reason: str

    @property
    def latest_offset(self) -> int | None:
        return self.offsets.latest

    @property
    def latest_commit(self) -> int | None:
        return self.commits.latest

    @property
    def problems(self) -> list[str]:
        return self.offsets.problems + self.commits.problems

    def to_json(self, full: bool = False) -> dict[str, Any]:
        """Plain JSON; unless ``full``, id lists are summarised (a log may hold 100 000 files)."""
        data = asdict(self)
        data.update(latest_offset=self.latest_offset, latest_commit=self.latest_commit, problems=self.problems)
        for log in ("offsets", "commits"):
            view = data[log]
            view["headers"] = {str(k): v for k, v in view["headers"].items()}
            view["count"] = len(view["ids"])
            if not full:
                view["ids"] = view["ids"][-_SHOWN:]
                view["gap_count"] = len(view["gaps"])
                view["gaps"] = view["gaps"][-_SHOWN:]
                view["skipped"] = view["skipped"][:_SHOWN]
        return data


def _verdict(offsets: LogView, commits: LogView) -> tuple[bool, str]:
    n, m = offsets.latest, commits.latest
    if offsets.problems or commits.problems:
        return False, "unreadable checkpoint files: " + "; ".join(offsets.problems + commits.problems)
    if n is None:
        if m is not None:
            return False, f"commits/ holds batch {m} but offsets/ holds none: the checkpoint is inconsistent"
        return True, "no batch in offsets/: a synchronous query starts from the beginning"
    if m is not None and m > n:
        return False, f"commits/ is ahead of offsets/ (commit {m} > offset {n}): the checkpoint is inconsistent"
    if offsets.missing_previous is not None:
        return False, (
            f"offsets/{n - 1} is missing: a synchronous restart needs the offsets of batch {n - 1} to resume "
            f"from batch {n}, and Spark would fail with IllegalStateException: batch {n - 1} doesn't exist "
            f"(or, when the commit log lags, 'Previous batch {n - 1} not found in offset log')"
        )
    if m == n:
        return True, f"batch {n} is committed: a synchronous restart resumes at batch {n + 1}"
    if m == n - 1 or (m is None and n == 0):
        return True, f"batch {n} is planned but not committed: a synchronous restart re-runs batch {n}"
    where = "holds no batch" if m is None else f"ends at batch {m}"
    first_skipped = 0 if m is None else m + 1
    return False, (
        f"commits/ {where}, more than one batch behind offsets/ at {n}: Spark would re-run only "
        f"batch {n} and treat batches {first_skipped}..{n - 1} as done without running them"
    )


def inspect_checkpoint(checkpoint: str, files_to_open: int = 2) -> Inspection:
    """Inspect a checkpoint folder (local path or fsspec URL) without changing anything in it."""
    fs, root = _fs(checkpoint)
    if _list(fs, root) is None:
        missing = LogView(present=False)
        return Inspection(checkpoint, False, missing, LogView(present=False), False, f"no checkpoint at {checkpoint}")
    offsets = _read_log(fs, root, "offsets", files_to_open)
    commits = _read_log(fs, root, "commits", files_to_open)
    safe, reason = _verdict(offsets, commits)
    return Inspection(checkpoint, True, offsets, commits, safe, reason)


def gate_sync_restart(checkpoint: str, log: Log = _log) -> Inspection:
    """Read the stopped checkpoint (never write it); fail with the inspector's reason unless a synchronous
    restart is safe."""
    inspection = inspect_checkpoint(checkpoint)
    log.info(
        "Checkpoint %s: latest offset %s, latest commit %s; %s",
        checkpoint,
        inspection.latest_offset,
        inspection.latest_commit,
        inspection.reason,
    )
    if not inspection.sync_restart_safe:
        raise UnsafeSyncRestartError(f"a synchronous restart is not safe: {inspection.reason}")
    return inspection
