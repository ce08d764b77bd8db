"""Where a URL's files live, opened the one way every reader and writer of the project opens them.

On object stores (``s3://``, ``abfs://``, ``gs://``, ...) fsspec's clients cache folder listings for the life of
the process; a sensor, a triggerer or a watcher that lives for months would then never see a commit, a progress
segment or a fleet entry another process wrote after its first look. So listings are never cached there.

Our files are small, and s3fs reads a file in parallel parts unless told not to: it asks for the size first
(a HEAD), and for a missing file lists its folder too, so every poll of a stop request that is not there cost
a HEAD and a LIST (a LIST is billed as a PUT). With one part, a read is one GET, a missing file one 404.
"""

from __future__ import annotations

from typing import Any

import fsspec

__all__ = ["LOCAL_PROTOCOLS", "is_local_url", "open_url"]

_S3 = frozenset({"s3", "s3a", "s3n"})
#: Protocols of this host's own disk.
LOCAL_PROTOCOLS = frozenset({"file", "local"})


def is_local_url(url: str) -> bool:
    """A path, or a ``file://`` URL: this host's disk."""
    protocol, _ = fsspec.core.split_protocol(url)
    return protocol is None or protocol in LOCAL_PROTOCOLS


def open_url(url: str) -> tuple[Any, str]:
    """fsspec's filesystem and the path within it; on anything but a local disk without the listing cache."""
    protocol, _ = fsspec.core.split_protocol(url)
    options: dict[str, Any] = {} if is_local_url(url) else {"use_listings_cache": False}
    if protocol in _S3:
        options["max_concurrency"] = 1
    fs, path = fsspec.core.url_to_fs(url, **options)
    return fs, str(path)
