"""Where a job lives: its checkpoint (or application) as an absolute path or a URL, in one spelling, and what
no checkpoint can be.

A folder of this host has one spelling (``//``, ``./`` and a trailing ``/`` dropped; ``file:/``,
``file:///`` and ``file://localhost/`` taken off), so two spellings of one folder are one checkpoint to a
desired folder as they are to Spark. A checkpoint is never ``/`` (its control area would be
``.async-stream`` in the current folder), the home folder, or inside a control area (a job's folder is its
own); a deploy refuses one inside another job's checkpoint (driver/start.py).
"""

from __future__ import annotations

import posixpath
import re
from pathlib import Path
from urllib.parse import urlsplit

__all__ = ["PYTHON_FILE_SUFFIXES", "URL_RE", "checkpoint_folder", "one_spelling", "python_file"]

URL_RE = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
#: What Spark puts on a driver's path from ``--py-files``: Python imports these from a zip.
PYTHON_FILE_SUFFIXES = (".py", ".zip", ".egg")
#: The name ending of a control area, the folder beside each checkpoint (state/control.py).
CONTROL_SUFFIX = ".async-stream"


def one_spelling(value: str) -> str:
    """``value`` as one absolute path of this host, or the URL as given; ValueError saying why it is neither."""
    if ".." in re.split(r"[/\\]", value):
        raise ValueError("must not climb out of a folder with '..': write the path it means")
    if value.startswith("file:"):
        parts = urlsplit(value)
        if parts.netloc in ("", "localhost"):
            value = parts.path or "/"
    if URL_RE.match(value):
        return value
    if not value.startswith("/"):
        raise ValueError(f"must be an absolute path or a URL, got {value!r}")
    return "/" + posixpath.normpath(value).lstrip("/")  # normpath keeps a leading '//'


def checkpoint_folder(value: str) -> str:
    """A checkpoint in one spelling; ValueError for one that cannot be a job's own folder."""
    value = one_spelling(value)
    if value == "/":
        raise ValueError("must not be / (its control area would be .async-stream in the current folder)")
    if value == str(Path.home()):
        raise ValueError(f"must not be the home folder {value}: give the job a folder of its own")
    inside = next((part for part in value.split("/") if part.endswith(CONTROL_SUFFIX)), None)
    if inside is not None:
        raise ValueError(f"must not be in or be a job's control area ({inside}): give the job a folder of its own")
    return value


def python_file(value: str) -> str:
    """A ``python_dependencies`` entry in one spelling; ValueError for what ``--py-files`` cannot carry."""
    value = one_spelling(value)
    if not value.endswith(PYTHON_FILE_SUFFIXES):
        raise ValueError(
            f"must be a .py, .zip or .egg file (what Spark's --py-files carries), got {value!r}; for compiled "
            "packages pack an environment (venv-pack) and give spark_conf spark.archives and spark.pyspark.python"
        )
    return value
