"""What differs between the Spark lines the runtime runs on, 3.5 to 4.3: each difference once, named with
the versions it covers (SPARK_FACTS.md, "Across versions"). No pyspark import: it reads what Spark hands over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = [
    "file_stream_options_class",
    "is_interrupted_stop",
    "progress_of",
    "spark_condition",
    "version_tuple",
]


def version_tuple(version: str) -> tuple[int, int]:
    """``(major, minor)`` of a Spark version string (``4.3.0``, ``3.5.9``, ``4.2.0-preview1``)."""
    parts = version.strip().split(".")
    try:
        return int(parts[0]), int("".join(c for c in parts[1] if c.isdigit()) or 0)
    except (IndexError, ValueError):
        raise ValueError(f"not a Spark version: {version!r}") from None


class _Fields:
    """A progress record that PySpark handed over as a dict, read by attribute as 4.x's objects are."""

    __slots__ = ("_data",)

    def __init__(self, data: Mapping[str, Any]) -> None:
        self._data = data

    def __getattr__(self, name: str) -> Any:
        value = self._data.get(name)
        if isinstance(value, list):
            return [_Fields(v) if isinstance(v, Mapping) else v for v in value]
        return value


def progress_of(progress: Any) -> Any:
    """A ``StreamingQueryProgress`` read by attribute: PySpark 3.5's ``lastProgress`` and ``recentProgress``
    are dicts of Spark's JSON (``p["batchId"]``), as are the listener's events on every line (listener.py);
    4.0+'s queries return objects (``p.batchId``). A nested dict (``durationMs``, a source's ``metrics``)
    stays a dict; a figure Spark's JSON leaves out (a NaN rate) reads as None."""
    return _Fields(progress) if isinstance(progress, Mapping) else progress


def spark_condition(exc: BaseException) -> str | None:
    """Spark's error class of a converted error: ``getCondition()`` on 4.0+, ``getErrorClass()`` on 3.5."""
    for name in ("getCondition", "getErrorClass"):
        get = getattr(exc, name, None)
        try:
            found = get() if callable(get) else None
        except Exception:  # noqa: BLE001 - a py4j error whose JVM side is gone
            found = None
        if found:
            return str(found)
    return None


#: What an async query's producer thread throws when its own stop interrupts it (3.5.9 and 4.2.0 seen here:
#: ``AsyncProgressTrackingMicroBatchExecution`` ends with ``RejectedExecutionException: Producer interrupted``).
_INTERRUPTED_STOP = ("Producer interrupted",)


def is_interrupted_stop(error: BaseException | str | None) -> bool:
    """Whether a query's end is Spark interrupting its async progress producer as we stopped it."""
    return error is not None and any(text in str(error) for text in _INTERRUPTED_STOP)


def file_stream_options_class(version: str) -> str:
    """The JVM class that reads a file source's options: moved to ``...streaming.runtime`` in 4.1."""
    package = "org.apache.spark.sql.execution.streaming"
    return (
        f"{package}.runtime.FileStreamOptions" if version_tuple(version) >= (4, 1) else f"{package}.FileStreamOptions"
    )
