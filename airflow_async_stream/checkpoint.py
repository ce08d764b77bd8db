"""Read-only view of Spark's checkpoint: which batch ids its offset and commit logs hold.

Nothing here writes. Only names that parse as integers are batch files; Spark's hidden temp files
(``.N.<uuid>.tmp``), Hadoop ``.crc`` files and ``N.compact`` files are skipped.
"""

from __future__ import annotations

import posixpath

import fsspec

__all__ = ["batch_ids", "latest_batch"]


def batch_ids(checkpoint: str, log: str) -> list[int]:
    """Sorted batch ids present in ``checkpoint/<log>`` (``offsets`` or ``commits``); empty if absent."""
    fs, root = fsspec.core.url_to_fs(checkpoint)
    folder = posixpath.join(root, log)
    try:
        names = fs.ls(folder, detail=False)
    except FileNotFoundError:
        return []
    ids = []
    for name in names:
        base = posixpath.basename(name.rstrip("/"))
        if base.isdigit():
            ids.append(int(base))
    return sorted(ids)


def latest_batch(checkpoint: str, log: str) -> int | None:
    """The largest batch id in ``checkpoint/<log>``, or None when the log holds no batch."""
    ids = batch_ids(checkpoint, log)
    return ids[-1] if ids else None
