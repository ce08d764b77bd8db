"""Where a URL's files live, opened, read and replaced the one way every reader and writer of the project does.

On object stores (``s3://``, ``abfs://``, ``gs://``, ...) fsspec's clients cache folder listings for the life of
the process; a sensor, a triggerer or a watcher that lives for months would then never see a commit, a progress
segment or a fleet entry another process wrote after its first look. So listings are never cached there.

Our files are small, and s3fs reads a file in parallel parts unless told not to: it asks for the size first
(a HEAD), and for a missing file lists its folder too, so every poll of a stop request that is not there cost
a HEAD and a LIST (a LIST is billed as a PUT). With one part, a read is one GET, a missing file one 404.
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import os
import posixpath
import stat
import uuid
from typing import Any, BinaryIO, cast

import fsspec
from fsspec.implementations.local import LocalFileSystem

from airflow_async_stream.exceptions import ControlAreaError, StorageError

__all__ = [
    "LOCAL_PROTOCOLS",
    "RECORD_BYTES",
    "append_file",
    "is_local_url",
    "make_folder",
    "open_local",
    "open_url",
    "put",
    "read_file",
    "read_json_object",
    "replace_file",
]

# Azure's client logs every request and response at INFO, S3's where it found its credentials: a watcher's
# sweep, a task's log and `list --json`'s output (Airflow's logging writes INFO to stdout) would carry them.
# Each is left as set where anyone set a level for it.
for _name in ("azure.core.pipeline.policies.http_logging_policy", "aiobotocore.credentials", "botocore.credentials"):
    if logging.getLogger(_name).level == logging.NOTSET:
        logging.getLogger(_name).setLevel(logging.WARNING)

_S3 = frozenset({"s3", "s3a", "s3n"})
#: What Azure's client says of a missing container (s3fs says FileNotFoundError).
_NO_BUCKET = frozenset({"ContainerNotFound", "NoSuchBucket"})
#: The package extra that brings a protocol's client (pyproject.toml).
_EXTRAS = {**dict.fromkeys(_S3, "s3"), **dict.fromkeys(("abfs", "abfss", "az", "adl"), "azure")}
#: Protocols of this host's own disk.
LOCAL_PROTOCOLS = frozenset({"file", "local"})


def is_local_url(url: str) -> bool:
    """A path, or a ``file://`` URL: this host's disk."""
    protocol, _ = fsspec.core.split_protocol(url)
    return protocol is None or protocol in LOCAL_PROTOCOLS


def make_folder(fs: fsspec.AbstractFileSystem, path: str) -> None:
    """Make ``path`` a folder where storage has folders (local disks, HDFS). Object stores have none: a key is
    written with its prefix, and s3fs's or adlfs's ``makedirs`` of a missing bucket or container creates it,
    so a typo in a bucket's name would make a bucket in the user's account. There nothing is made."""
    protocols = fs.protocol if isinstance(fs.protocol, tuple) else (fs.protocol,)
    if LOCAL_PROTOCOLS & set(protocols) or {"hdfs", "viewfs"} & set(protocols):
        fs.makedirs(path, exist_ok=True)


def open_url(url: str) -> tuple[Any, str]:
    """fsspec's filesystem and the path within it; on anything but a local disk without the listing cache."""
    protocol, _ = fsspec.core.split_protocol(url)
    options: dict[str, Any] = {} if is_local_url(url) else {"use_listings_cache": False}
    if protocol in _S3:
        options["max_concurrency"] = 1
    try:
        fs, path = fsspec.core.url_to_fs(url, **options)
    except ImportError as exc:
        extra = _EXTRAS.get(str(protocol))
        how = f'pip install "airflow-async-stream[{extra}]"' if extra else str(exc)
        raise StorageError(f"{url}: {protocol}:// storage needs its client library here: {how}") from None
    return fs, str(path)


def replace_file(fs: fsspec.AbstractFileSystem, target: str, payload: bytes) -> None:
    """Replace a file atomically, so a reader never sees half of it: a temporary file beside it and a rename
    on local disks (the temporary file removed when the write or the rename fails: a full disk, a folder where
    the file should be), a single put on object stores (whose puts are atomic)."""
    if isinstance(fs, LocalFileSystem):
        folder, name = posixpath.split(target)
        tmp = posixpath.join(folder, f".{name}.{uuid.uuid4().hex}.tmp")
        try:
            with open_local(tmp, "xb") as fh:
                fh.write(payload)
            os.replace(tmp, target)  # a symlink at ``target`` is replaced, never followed
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    else:
        put(fs, target, payload)


def put(fs: fsspec.AbstractFileSystem, path: str, payload: bytes) -> None:
    """Write a whole file on an object store (one request); a missing bucket or container is a ControlAreaError
    naming the file (a write creates its key: only the bucket can be missing), never made."""
    try:
        fs.pipe_file(path, payload)
    except Exception as exc:
        if not isinstance(exc, FileNotFoundError) and getattr(exc, "error_code", None) not in _NO_BUCKET:
            raise
        raise ControlAreaError(
            f"cannot write {fs.unstrip_protocol(path)}: its bucket or container does not exist "
            f"({str(exc).splitlines()[0]}); nothing creates one: check the name, or create it"
        ) from None


def read_file(fs: fsspec.AbstractFileSystem, path: str, start: int | None = None, most: int | None = None) -> bytes:
    """A file's bytes from ``start`` (from the end when negative); on local disks a plain read (fsspec's costs
    2x for a small file, 5x for a missing one). More than ``most`` bytes is a ControlAreaError: a reader never
    takes in what a broken or hostile writer made huge (docs/runtime.md: what each kind may hold)."""
    if isinstance(fs, LocalFileSystem):
        with open_local(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            begin = max(0, size + start) if start is not None and start < 0 else start or 0
            _within(path, size - begin, most)
            fh.seek(begin)
            return fh.read(size - begin)
    if start is not None and start < 0:  # a tail: not every store takes a range from the end (Azure)
        start = max(0, int(fs.size(path)) + start) or None
    end = None if most is None else (start or 0) + most + 1
    data = bytes(fs.cat_file(path, start=start, end=end))
    _within(fs.unstrip_protocol(path), len(data), most)
    return data


def _within(path: str, size: int, most: int | None) -> None:
    if most is not None and size > most:
        raise ControlAreaError(
            f"{path} holds over {most:,} bytes, more than a file of its kind may: refused "
            "(written by hand or by a broken writer)"
        )


def append_file(fs: fsspec.AbstractFileSystem, path: str, payload: bytes) -> None:
    """Append to a file where storage appends (local disks, HDFS); locally never through a symlink."""
    if isinstance(fs, LocalFileSystem):
        with open_local(path, "ab") as fh:
            fh.write(payload)
    else:
        with fs.open(path, "ab") as fh:
            fh.write(payload)


#: The most a JSON record of a control area (status, deployment, spec, a request, a hold) may hold.
RECORD_BYTES = 1 << 20

#: How ``open_local`` opens each mode (a symlink at the name is never followed: ELOOP).
_FLAGS = {"rb": os.O_RDONLY, "ab": os.O_WRONLY | os.O_APPEND | os.O_CREAT, "xb": os.O_WRONLY | os.O_CREAT | os.O_EXCL}


def open_local(path: str, mode: str) -> BinaryIO:
    """A file of a control area on a local disk, opened neither through a symlink at its name nor in a folder
    that is one: whoever writes the control area's storage cannot point a writer or a reader elsewhere (a
    ``.pth`` file, a key). ControlAreaError naming the link."""
    folder = posixpath.dirname(path)
    if os.path.islink(folder):
        raise ControlAreaError(f"{folder} is a symbolic link: refused (a control area is never followed)")
    try:
        fd = os.open(path, _FLAGS[mode] | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
    except OSError as exc:
        if exc.errno != errno.ELOOP:
            raise
        raise ControlAreaError(
            f"{path} is a symbolic link: refused (a control area's files are never followed)"
        ) from None
    if stat.S_ISDIR(os.fstat(fd).st_mode):  # opened read-only, a folder says so only at the read, nameless
        os.close(fd)
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    return cast(BinaryIO, os.fdopen(fd, mode.replace("x", "w")))


def read_json_object(fs: fsspec.AbstractFileSystem, path: str, where: str) -> dict[str, Any] | None:
    """A file's JSON object, or None when the file does not exist; ControlAreaError naming ``where`` when it
    holds anything else (a record that cannot be read is an error, never taken for a missing one)."""
    try:
        raw = read_file(fs, path, most=RECORD_BYTES)
    except FileNotFoundError:
        return None
    try:
        data = json.loads(raw)
    except (ValueError, RecursionError) as exc:  # not JSON, a number past Python's limit, nesting past the stack
        raise ControlAreaError(f"{where} is not valid JSON: {str(exc)[:200]}") from None
    if not isinstance(data, dict):
        raise ControlAreaError(f"{where} should hold a JSON object, found {type(data).__name__}")
    return data
