"""``validate --analyze``'s Spark side: build each spec's query on one local Spark, as the driver would, and
never start it.

    python -m airflow_async_stream.runtime.analyze < {"specs": [{"file": F, "spec": {...}}, ...]}

It prints a line ``@analysis {"ready": seconds, "spark": version}`` once Spark is up, then one
``@analysis {"file", "problems": [[field, reason]], "not_checked": [...], "seconds"}`` per spec, in the order
given (other lines on stdout, an application's prints, are not ours). Each spec gets its own session
(``newSession``: its own SQL conf and temporary views) over one SparkContext: a folder costs one JVM start.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import runpy
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.runtime import context
from airflow_async_stream.runtime.checks import (
    Findings,
    apply_conf,
    attempt,
    check_file_options,
    check_output_mode,
    check_real_time,
    source_field,
)
from airflow_async_stream.runtime.query import (
    SQL_REDACTION_REGEX,
    apply_transform,
    read_source,
    refuse_stateful_with_async,
)
from airflow_async_stream.runtime.reach import format_reach, source_reach
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import SecretOptions

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

__all__ = ["MARK", "analyze", "main"]

#: Why an application that starts its own query is refused.
SELF_STARTED = (
    "starts its query itself (DataStreamWriter.start or toTable): hand the writer to "
    "airflow_async_stream.runtime.govern(writer), which starts and governs it"
)
#: What starts each line of ours on stdout.
MARK = "@analysis "
#: A secret option's stand-in value: its connection is not read here, so only its presence is checked.
PLACEHOLDER = "<secret not read by analyze>"


class _Capture:
    """Stands in for the governor under an application file: keeps what ``govern(writer)`` hands over."""

    df: DataFrame | None = None

    def run(self, writer: Any, spark: Any, spec: JobSpec, df: DataFrame | None) -> None:
        self.df = df


def analyze(root: SparkSession, spec: JobSpec, scratch: Path) -> Findings:
    """Build ``spec``'s query in a new session of ``root`` and check it as ``start()`` would, without starting it
    (``scratch``: a folder of ours, whose empty ``standin`` folder stands in for a source out of reach)."""
    session = root.newSession()
    verdict = Findings()
    apply_conf(session, spec, verdict)
    if spec.application:
        df = _run_application(session, spec, verdict)
    else:
        check_file_options(session, spec, verdict)
        df = _build(session, spec, verdict, scratch)
        if df is not None:
            attempt(verdict, lambda exc: "async_progress.enabled", lambda: refuse_stateful_with_async(df, spec))
    if df is not None:  # every problem of the built query is said at once, whatever else was wrong
        check_output_mode(session, df, spec, verdict)
        if spec.trigger.kind == "real_time":
            check_real_time(df, spec, verdict)
    if spec.sink is not None and not spec.application:
        reach = format_reach(session, "sink", spec.sink.format)
        verdict.problems += reach.problems
        verdict.not_checked += reach.not_checked
    return verdict


def _build(session: SparkSession, spec: JobSpec, verdict: Findings, scratch: Path) -> DataFrame | None:
    assert spec.source is not None  # the spec rules require it without an application
    reach = source_reach(session, spec.source)
    verdict.problems += reach.problems
    verdict.not_checked += reach.not_checked
    if reach.problems:
        return None
    if reach.standin_ddl is None and reach.not_checked:
        return None
    if reach.standin_ddl is not None:
        df = attempt(verdict, lambda exc: "source.schema", lambda: reach.standin(session, str(scratch / "standin")))
    else:
        secrets = dict.fromkeys(spec.source.secret_options, PLACEHOLDER)
        df = attempt(verdict, lambda exc: source_field(spec, exc), lambda: read_source(session, spec, secrets))
    if df is None:
        return None
    entrypoint = spec.transform.entrypoint if spec.transform else None
    if entrypoint and not _module_here(entrypoint):
        verdict.not_checked.append(
            f"transform.entrypoint: module {entrypoint.split(':')[0]!r} is not importable here (the current folder "
            "and PYTHONPATH), so the transform was not checked"
        )
        return None
    where = "transform.entrypoint" if entrypoint else "transform.sql"
    transformed: DataFrame | None = attempt(verdict, lambda exc: where, lambda: apply_transform(session, spec, df))
    return transformed


def _module_here(entrypoint: str) -> bool:
    """Whether the entrypoint's module can be found on this host (without running it)."""
    try:
        return importlib.util.find_spec(entrypoint.split(":")[0]) is not None
    except (ImportError, ValueError):  # a parent package missing
        return False


def _run_application(session: SparkSession, spec: JobSpec, verdict: Findings) -> DataFrame | None:
    """Run the application file as the driver does, up to ``govern(writer)``, which keeps its query unstarted."""
    assert spec.application is not None
    if not Path(spec.application).is_file():
        verdict.not_checked.append(f"application: {spec.application} is not on this host, so its query was not built")
        return None
    capture = _Capture()
    with context.governed(spec, capture, session, SecretOptions()), _never_started():  # type: ignore[arg-type]
        ran = attempt(verdict, lambda exc: "application", lambda: runpy.run_path(spec.application, run_name="__main__"))
        governed = context.was_governed()
    if ran and not governed:
        verdict.problems.append(
            ("application", "finished without handing its writer to airflow_async_stream.runtime.govern(writer)")
        )
    return capture.df


@contextlib.contextmanager
def _never_started() -> Iterator[None]:
    """While an application runs here, a query it would start itself is refused instead (analysis starts none:
    a started query would read, write and checkpoint for real)."""
    from pyspark.sql.streaming.readwriter import DataStreamWriter

    def refuse(self: Any, *args: Any, **kwargs: Any) -> None:
        raise SpecError([("application", SELF_STARTED)])

    saved = DataStreamWriter.start, DataStreamWriter.toTable
    DataStreamWriter.start = DataStreamWriter.toTable = refuse  # type: ignore[method-assign,assignment]
    try:
        yield
    finally:
        DataStreamWriter.start, DataStreamWriter.toTable = saved  # type: ignore[method-assign]


def start_spark(scratch: Path) -> SparkSession:
    """One local Spark for every spec: one core, no UI, Spark's own lines only when they are errors."""
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[1]")
        .appName("async-stream-analyze")
        .config("spark.ui.enabled", "false")
        .config("spark.log.level", "ERROR")
        .config("spark.sql.redaction.options.regex", SQL_REDACTION_REGEX)
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .getOrCreate()
    )


def _emit(record: dict[str, Any]) -> None:
    sys.stdout.write(MARK + json.dumps(record) + "\n")
    sys.stdout.flush()


def main() -> int:
    request = json.load(sys.stdin)
    with tempfile.TemporaryDirectory(prefix="async-stream-analyze-") as folder:
        scratch = Path(folder)
        (scratch / "standin").mkdir()
        started = time.monotonic()
        spark = start_spark(scratch)
        _emit({"ready": round(time.monotonic() - started, 3), "spark": spark.version})
        try:
            for entry in request["specs"]:
                _emit(_analyzed(spark, entry, scratch))
        finally:
            spark.stop()
    return 0


def _analyzed(spark: SparkSession, entry: dict[str, Any], scratch: Path) -> dict[str, Any]:
    began = time.monotonic()
    spec = parse_spec(entry["spec"], source=entry["file"])
    try:
        verdict = analyze(spark, spec, scratch)
    except Exception as exc:  # a fault of ours must not cost the other specs their verdicts
        verdict = Findings(not_checked=[f"the analysis itself failed ({type(exc).__name__}: {exc})"])
    return {
        "file": entry["file"],
        "problems": verdict.problems,
        "not_checked": verdict.not_checked,
        "seconds": round(time.monotonic() - began, 3),
    }


if __name__ == "__main__":
    sys.exit(main())
