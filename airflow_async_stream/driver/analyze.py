"""Analyze specs on a local Spark before anything is deployed: one child Python runs runtime/analyze.py for all
of them (one JVM start), and its answers come back per spec as they are ready.

The child is this Python (the one with pyspark and the user's transform modules), started in the caller's
folder, its input the specs as JSON on stdin: nothing it reads is re-read from disk, so it judges exactly the
specs the caller loaded. Spark's own log goes to a file, shown only when the child fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from importlib.util import find_spec
from typing import Any

from airflow_async_stream.driver.local import check_java
from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.spec.model import JobSpec

__all__ = ["Analysis", "AnalysisError", "analyze_specs"]

MARK = "@analysis "  # runtime/analyze.py's MARK (not imported: that module imports pyspark's side)
_LOG_TAIL = 2000


class AnalysisError(AsyncStreamError):
    """Spark could not be started, or stopped answering: nothing was analyzed (not a verdict on any spec)."""


@dataclass(frozen=True)
class Analysis:
    """One spec's verdict: ``problems`` (field, reason) make it wrong; ``not_checked`` says what this host
    could not check (a source or sink out of reach), which is never a failure."""

    file: str
    job: str
    problems: list[tuple[str, str]] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return not self.problems

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["problems"] = [{"field": f, "reason": r} for f, r in self.problems]
        data["ok"] = self.ok
        return data


@dataclass
class Run:
    """A whole analysis: the verdicts in the order given, and Spark's start-up time."""

    analyses: list[Analysis]
    spark_start_seconds: float
    spark_version: str
    seconds: float


def analyze_specs(
    specs: list[tuple[str, JobSpec]],
    on_analysis: Callable[[Analysis], None] | None = None,
    timeout_s: float = 600.0,
    program: list[str] | None = None,
) -> Run:
    """Analyze ``(file, spec)`` pairs in one local Spark; ``on_analysis`` sees each verdict as it arrives.

    ``program`` replaces the child's command (tests stand in a child that fails or hangs)."""
    started = time.monotonic()
    if find_spec("pyspark") is None:
        raise AnalysisError(f"analysis needs pyspark in this Python ({sys.executable}): pip install pyspark")
    check_java()
    request = json.dumps({"specs": [{"file": file, "spec": spec.to_mapping()} for file, spec in specs]})
    by_file = dict(specs)
    analyses: list[Analysis] = []
    with tempfile.TemporaryFile("w+") as log:
        child = subprocess.Popen(  # an argument list, never a shell
            program or [sys.executable, "-m", "airflow_async_stream.runtime.analyze"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )
        timed_out = threading.Event()

        def stop_child() -> None:  # a child that stops answering: its output ends, and so does the loop below
            timed_out.set()
            child.kill()

        watchdog = threading.Timer(timeout_s, stop_child)
        watchdog.start()
        try:
            assert child.stdin is not None and child.stdout is not None
            child.stdin.write(request)
            child.stdin.close()
            ready = _read(child.stdout, by_file, analyses, on_analysis)
            code = child.wait()
        finally:
            watchdog.cancel()
            if child.poll() is None:
                child.kill()
                child.wait()
        if timed_out.is_set():
            raise AnalysisError(f"the analysis Spark did not finish in {timeout_s:.0f} s, and was stopped")
        if code != 0 or len(analyses) != len(specs):
            log.seek(0)
            tail = log.read()[-_LOG_TAIL:].strip()
            raise AnalysisError(
                f"the analysis Spark ended with exit code {code} after {len(analyses)} of {len(specs)} specs:\n{tail}"
            )
    return Run(analyses, ready.get("ready", 0.0), ready.get("spark", "?"), round(time.monotonic() - started, 3))


def _read(
    lines: Iterable[str],
    by_file: dict[str, JobSpec],
    analyses: list[Analysis],
    on_analysis: Callable[[Analysis], None] | None,
) -> dict[str, Any]:
    """Collect the child's verdicts into ``analyses`` as they come; return its ``ready`` record."""
    ready: dict[str, Any] = {}
    for line in lines:
        if not line.startswith(MARK):
            continue
        record = json.loads(line[len(MARK) :])
        if "ready" in record:
            ready = record
            continue
        analysis = _analysis(record, by_file[record["file"]].name)
        analyses.append(analysis)
        if on_analysis:
            on_analysis(analysis)
    return ready


def _analysis(record: dict[str, Any], job: str) -> Analysis:
    return Analysis(
        file=record["file"],
        job=job,
        problems=[(str(f), str(r)) for f, r in record["problems"]],
        not_checked=list(record["not_checked"]),
        seconds=float(record["seconds"]),
    )
