"""Points where a test holds a driver still, so a fault lands in a window it chose, never one a sleep hoped for.

``AIRFLOW_ASYNC_STREAM_PAUSE=<point>=<file>`` in a driver's environment: on reaching ``<point>`` the driver
waits while ``<file>`` exists (at most ``LONGEST_S``), then goes on. Unset, as in any real deployment, a point
costs one environment lookup.
"""

from __future__ import annotations

import os
import time

__all__ = ["LONGEST_S", "pause_at"]

#: The longest a point holds a driver (a test that forgot its file does not hang a driver for good).
LONGEST_S = 120.0


def pause_at(point: str) -> None:
    """Wait here while the test's file for ``point`` exists."""
    named, _, path = os.environ.get("AIRFLOW_ASYNC_STREAM_PAUSE", "").partition("=")
    if named != point or not path:
        return
    deadline = time.monotonic() + LONGEST_S
    while os.path.exists(path) and time.monotonic() < deadline:
        time.sleep(0.01)
