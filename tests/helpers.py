"""Builders both tiers share: the job spec most tests run, rate -> noop."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.spec.load import deep_merge


def rate_noop(
    name: str = "job", checkpoint: str | None = None, rows: int | None = None, **changes: Any
) -> dict[str, Any]:
    """A job spec mapping: the rate source into the noop sink (the main job's shape), checkpoint ``/ck/<name>``
    unless given, ``rows`` per second if given, and ``changes`` merged in field by field."""
    spec: dict[str, Any] = {
        "name": name,
        "checkpoint": checkpoint if checkpoint is not None else f"/ck/{name}",
        "source": {"format": "rate"},
        "sink": {"format": "noop"},
    }
    if rows is not None:
        spec["source"]["options"] = {"rowsPerSecond": rows}
    return deep_merge(spec, changes)
