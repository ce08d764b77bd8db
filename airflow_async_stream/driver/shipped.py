"""Where a cluster driver's runtime bundle comes from: this host's files, which spark-submit uploads at every
deploy, or one copy on storage the cluster reads (the Spark connection's ``bundle_folder``), written once.

A copy is ``<bundle_folder>/<bundle key>/driver.py`` and ``runtime.zip``. Each deploy reads it back and
compares it with this host's bundle byte for byte: a copy someone else rewrote is replaced, and said so,
before the submit names it. The folder must be one the drivers cannot write (docs/reliability.md).
"""

from __future__ import annotations

import logging
import posixpath
from dataclasses import dataclass
from pathlib import Path

from airflow_async_stream.driver.bundle import Bundle
from airflow_async_stream.exceptions import ControlAreaError, DeployError
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.storage import make_folder, open_url, read_file, replace_file

__all__ = ["BUNDLE_FOLDER_EXTRA", "UPLOAD_PATH", "Shipped", "refuse_without_upload_folder", "shipped"]

_log = logging.getLogger(__name__)

#: The Spark connection's extra naming storage the cluster reads, for one copy of each bundle.
BUNDLE_FOLDER_EXTRA = "bundle_folder"
#: Where spark-submit uploads a Kubernetes driver pod's local files.
UPLOAD_PATH = "spark.kubernetes.file.upload.path"


@dataclass(frozen=True)
class Shipped:
    """What the submit names: the entry (its primary resource) and the archive, as paths or URLs."""

    entry: str
    archive: str
    #: Whether spark-submit uploads them from this host (Kubernetes then needs an upload folder).
    from_this_host: bool


def shipped(bundle: Bundle, folder: str | None) -> Shipped:
    """``bundle`` as this host's files, or its copy in ``folder``, written or mended first."""
    if not folder:
        return Shipped(str(bundle.entry), str(bundle.archive), from_this_host=True)
    if "://" not in folder or folder.startswith("file:"):
        raise DeployError(
            f"connection extra {BUNDLE_FOLDER_EXTRA}: {folder} is not storage a cluster reads; give a URL such as "
            "hdfs:///apps/async-stream/bundles or s3a://bucket/async-stream/bundles"
        )
    base = f"{folder.rstrip('/')}/{bundle.key}"
    for local in (bundle.entry, bundle.archive):
        _copy(local.read_bytes(), f"{base}/{local.name}")
    return Shipped(f"{base}/{bundle.entry.name}", f"{base}/{bundle.archive.name}", from_this_host=False)


def refuse_without_upload_folder(spec: JobSpec, folder: str | None, defaults: Path) -> None:
    """Refuse a Kubernetes deploy that ships this host's files with nowhere to upload them: the spec's
    ``spark_conf`` or the client's ``defaults`` (spark-defaults.conf) name one, or nothing local is shipped
    (a ``bundle_folder`` copy, the job's files as URLs)."""
    files = [f for f in (spec.application, *spec.python_dependencies) if f]
    if (folder and all("://" in f for f in files)) or spec.spark_conf.get(UPLOAD_PATH):
        return
    try:
        lines = defaults.read_text().splitlines()
    except OSError:
        lines = []
    if any(line.split()[:1] == [UPLOAD_PATH] and len(line.split()) > 1 for line in lines):
        return
    raise DeployError(
        f"spark_conf: {UPLOAD_PATH} is not set (in the spec or the client's spark-defaults.conf): on Kubernetes "
        "spark-submit ships the runtime and the job's files to the driver pod through it; give storage the "
        "cluster reads, e.g. s3a://bucket/spark-uploads, or the connection's bundle_folder"
    )


def _copy(payload: bytes, url: str) -> None:
    fs, path = open_url(url)
    try:
        there: bytes | None = read_file(fs, path, most=len(payload))
    except FileNotFoundError:
        there = None
    except ControlAreaError:  # larger than ours: not ours
        there = b""
    if there == payload:
        return
    if there is not None:
        _log.warning("%s differs from this host's runtime bundle (written by someone else?): replacing it", url)
    make_folder(fs, posixpath.dirname(path))
    replace_file(fs, path, payload)
