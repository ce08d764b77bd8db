"""How often a wait reads a job's control area: often on a local disk, less often where each read is a
request (an object store)."""

from __future__ import annotations

from airflow_async_stream.state.control import ControlArea

__all__ = ["POLL_S", "REMOTE_POLL_S", "poll_interval"]

POLL_S = 0.1
REMOTE_POLL_S = 0.5


def poll_interval(control: ControlArea) -> float:
    return POLL_S if control.is_local else REMOTE_POLL_S
