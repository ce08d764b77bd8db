"""The Spark lines a job can run on, 3.5 to 4.3, and what each accepts: the rules (rules.py, realtime.py) are
looked up for the line a job is judged for.

Each fact was read from that line's own jars, and tests/integration/test_spark_versions.py reads them again
and checks the line's behaviour. A deploy judges
for the Spark it submits to (driver/spark_version.py asks its spark-submit), the driver for the Spark it runs
on; with no Spark at hand (a DAG file's parse, ``validate`` without one), for the version
``AIRFLOW_ASYNC_STREAM_SPARK_VERSION`` names, else the installed pyspark's (the embedded Spark's), else the
newest line known here.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from importlib import metadata

from airflow_async_stream.exceptions import SettingsError

__all__ = [
    "LINES",
    "SPARK_VERSION_ENV",
    "SparkLine",
    "judge_process_for",
    "judged",
    "judging",
    "line_of",
]

#: The setting that names the Spark a spec is judged for where none is at hand.
SPARK_VERSION_ENV = "AIRFLOW_ASYNC_STREAM_SPARK_VERSION"
_VERSION_RE = re.compile(r"^(\d+)\.(\d+)(?:\.(\d+))?(?:[-.+][\w.-]*)?$")


@dataclass(frozen=True)
class SparkLine:
    """What one Spark line (major.minor) accepts, as the rules need it."""

    line: tuple[int, int]
    #: Scala binary version of its builds (its Kafka connector's artifact suffix).
    scala: str
    #: Real-time mode from PySpark: None (no ``trigger(realTime=...)``: 3.5, 4.0, 4.1), "refuses_async" (4.2:
    #: STREAMING_REAL_TIME_MODE.ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED), "async_at_interval_0" (4.3: async on by
    #: default there, and only at interval 0: ..._CHECKPOINTING_INTERVAL_NON_ZERO).
    real_time: str | None
    #: ``spark.sql.streaming.queryEvolution.enableSinkEvolution`` exists, and refuses async progress tracking
    #: (STREAMING_QUERY_EVOLUTION_ERROR.ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED): 4.2+.
    sink_evolution: bool = False

    @property
    def name(self) -> str:
        return f"{self.line[0]}.{self.line[1]}"


LINES = {
    line.line: line
    for line in (
        SparkLine((3, 5), "2.12", None),
        SparkLine((4, 0), "2.13", None),
        SparkLine((4, 1), "2.13", None),
        SparkLine((4, 2), "2.13", "refuses_async", sink_evolution=True),
        SparkLine((4, 3), "2.13", "async_at_interval_0", sink_evolution=True),
    )
}
NEWEST = max(LINES)


def parse_version(version: str, where: str) -> str:
    """``version`` as given when it names a Spark line known here; else an error naming ``where`` it came from."""
    match = _VERSION_RE.match(version.strip())
    if not match:
        raise SettingsError(f"{where}: {version!r} is not a Spark version (e.g. 3.5.9 or 4.3.0)")
    line = (int(match[1]), int(match[2]))
    if line not in LINES:
        known = ", ".join(f"{a}.{b}" for a, b in sorted(LINES))
        raise SettingsError(f"{where}: Spark {version} is not a line this release supports ({known})")
    return version.strip()


def line_of(version: str, where: str = "Spark version") -> SparkLine:
    """The line of a Spark version string (``3.5.9``, ``4.3.0``), or an error naming ``where``."""
    match = _VERSION_RE.match(parse_version(version, where))
    assert match is not None
    return LINES[(int(match[1]), int(match[2]))]


#: The Spark version this context judges for (set by a deploy, the driver, ``validate --spark-version``).
_judging: ContextVar[tuple[str, str] | None] = ContextVar("judging", default=None)


@contextlib.contextmanager
def judging(version: str, why: str) -> Iterator[SparkLine]:
    """Judge specs in this context for Spark ``version`` (``why``: where that version came from)."""
    line = line_of(version, why)
    token = _judging.set((version, why))
    try:
        yield line
    finally:
        _judging.reset(token)


#: This process's Spark, for every spec it judges (the driver: the Spark it runs on).
_process: tuple[str, str] | None = None


def judge_process_for(version: str, why: str) -> SparkLine:
    """Judge every spec of this process for Spark ``version`` (a context's ``judging`` still wins)."""
    global _process
    line = line_of(version, why)
    _process = (version, why)
    return line


@functools.cache
def _installed_pyspark() -> str | None:
    """The installed pyspark distribution's version (the embedded Spark), read without importing it (once: a
    read costs about 0.7 ms, and a plan parses a spec per job)."""
    try:
        return metadata.version("pyspark")
    except metadata.PackageNotFoundError:
        return None


def judged() -> tuple[SparkLine, str, str]:
    """``(line, version, why)``: the Spark this context judges specs for, and where that came from. A setting
    that names no supported Spark is an error, never a silent default."""
    chosen = _judging.get() or _process
    if chosen is not None:
        return line_of(chosen[0], chosen[1]), chosen[0], chosen[1]
    setting = os.environ.get(SPARK_VERSION_ENV)
    if setting:
        return line_of(setting, SPARK_VERSION_ENV), setting, SPARK_VERSION_ENV
    installed = _installed_pyspark()
    match = _VERSION_RE.match(installed or "")
    if installed and match and (int(match[1]), int(match[2])) in LINES:
        return LINES[(int(match[1]), int(match[2]))], installed, "the installed pyspark"
    newest = f"{NEWEST[0]}.{NEWEST[1]}"
    return LINES[NEWEST], newest, "the newest line this release knows"
