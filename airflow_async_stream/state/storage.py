"""Where a URL's files live, opened the one way every reader and writer of the project opens them.

On object stores (``s3://``, ``abfs://``, ``gs://``, ...) fsspec's clients cache folder listings for the life of
the process; a sensor, a triggerer or a watcher that lives for months would then never see a commit, a progress
segment or a fleet entry another process wrote after its first look. So listings are never cached there.
"""

from __future__ import annotations

from typing import Any

import fsspec

__all__ = ["LOCAL_PROTOCOLS", "is_local_url", "open_url"]

#: Protocols of this host's own disk.
LOCAL_PROTOCOLS = frozenset({"file", "local"})


def is_local_url(url: str) -> bool:
    """A path, or a ``file://`` URL: this host's disk."""
    protocol, _ = fsspec.core.split_protocol(url)
    return protocol is None or protocol in LOCAL_PROTOCOLS


def open_url(url: str) -> tuple[Any, str]:
    """fsspec's filesystem and the path within it; on anything but a local disk without the listing cache."""
    options: dict[str, Any] = {} if is_local_url(url) else {"use_listings_cache": False}
    fs, path = fsspec.core.url_to_fs(url, **options)
    return fs, str(path)
