"""The program spark-submit runs for every job: load the spec, build or run the query, govern it.

    spark-submit ... driver.py --control-area URL --deployment-id ID --spec-sha256 HEX \
        --async-progress-enabled true|false --async-progress-interval-ms N

The async settings on the command line make them visible in ``ps`` and Spark's UI; the driver checks
that they, and the digest, match the spec it reads, so a spec swapped after submit is refused.
"""

from __future__ import annotations

import sys

from airflow_async_stream.runtime.python_path import without_installed_copies

sys.path[:] = without_installed_copies(sys.path)  # first: before anything imports pyspark

import argparse
import json
import logging
import os
import runpy
import signal
import traceback
from functools import partial
from typing import Any
from urllib.parse import urlsplit

from airflow_async_stream.driver.args import parse_driver_arguments, spec_digest
from airflow_async_stream.exceptions import SettingsError, SpecError
from airflow_async_stream.lineage.link import secret_values, take_running_settings
from airflow_async_stream.lineage.running import running_events
from airflow_async_stream.runtime import context
from airflow_async_stream.runtime.governor import Governor
from airflow_async_stream.runtime.query import SQL_REDACTION_REGEX
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import Redactor, SecretOptions, take_from_environment
from airflow_async_stream.spec.versions import judge_process_for
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.progress_log import Retention
from airflow_async_stream.state.typed import printable

#: Spark's default ``spark.redaction.regex`` and the OpenLineage transport's API key and headers.
CONF_REDACTION_REGEX = r"(?i)secret|password|token|access[.]?key|apikey|openlineage[.]transport.*[.]headers[.]"

EXIT_FAILED = 1
EXIT_BAD_SPEC = 2


def load_submitted_spec(control: ControlArea, args: argparse.Namespace) -> JobSpec:
    """Read spec.json, check it is the one submitted, and validate it a third time."""
    raw = control.read_bytes(ControlArea.SPEC)
    if spec_digest(raw) != args.spec_sha256:
        raise SpecError([("(spec)", "spec.json changed after submit: another deploy replaced it")])
    spec = parse_spec(json.loads(raw), source=control.path(ControlArea.SPEC))
    submitted = (args.async_progress_enabled == "true", args.async_progress_interval_ms)
    if submitted != (spec.async_progress.enabled, spec.async_progress.checkpoint_interval_ms):
        raise SpecError([("async_progress", f"submitted as {submitted}, spec.json says otherwise")])
    return spec


def run(spec: JobSpec, governor: Governor, secrets: SecretOptions) -> None:
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(f"async-stream-{spec.name}")
    if "spark.sql.redaction.options.regex" not in spec.spark_conf:
        builder = builder.config("spark.sql.redaction.options.regex", SQL_REDACTION_REGEX)
    conf_secrets = secrets.options.get("conf", {})  # the lineage transport's credentials
    for key, value in conf_secrets.items():
        builder = builder.config(key, value)
    if conf_secrets and "spark.redaction.regex" not in spec.spark_conf:  # Spark's UI masks them too
        builder = builder.config("spark.redaction.regex", CONF_REDACTION_REGEX)
    spark = builder.getOrCreate()
    try:
        _run_query(spec, governor, spark, secrets)
    finally:
        spark.stop()


def _run_query(spec: JobSpec, governor: Governor, spark: Any, secrets: SecretOptions) -> None:
    from airflow_async_stream.runtime.query import (
        apply_spec_to_writer,
        build_dataframe,
        refuse_stateful_with_async,
    )

    if spec.application:
        with context.governed(spec, governor, spark, secrets):
            runpy.run_path(application_file(spec.application), run_name="__main__")
            if not context.was_governed():
                raise RuntimeError(
                    f"{spec.application} finished without handing its writer to "
                    "airflow_async_stream.runtime.govern(writer)"
                )
        return
    df = build_dataframe(spark, spec, secrets.options.get("source"))
    refuse_stateful_with_async(df, spec)
    writer = apply_spec_to_writer(
        df.writeStream, spec, application_mode=False, secret_options=secrets.options.get("sink")
    )
    governor.run(writer, spark, spec, df)


def application_file(application: str) -> str:
    """The application to run: its own path where this host has it, else the copy Spark shipped with the driver
    (``--py-files`` in cluster mode: the working folder on YARN, a folder on the path on Kubernetes)."""
    if os.path.isfile(application):
        return application
    name = os.path.basename(urlsplit(application).path)
    for folder in (os.getcwd(), *sys.path):
        if folder and os.path.isfile(os.path.join(folder, name)):
            return os.path.join(folder, name)
    return application  # runpy says it is missing


def _kafka_servers(spec: JobSpec, secrets: SecretOptions, conn_id: str) -> str | None:
    """The bootstrap servers the connection ``conn_id`` gave the side that names it (for lineage names)."""
    for side in ("source", "sink"):
        endpoint = getattr(spec, side)
        if endpoint is not None and endpoint.connection == conn_id:
            return secrets.options.get(side, {}).get("kafka.bootstrap.servers")
    return None


def _pyspark_in_use() -> dict[str, str]:
    """Which PySpark this driver imported, for its status record (see runtime/python_path.py)."""
    import pyspark

    return {"version": pyspark.__version__, "from": os.path.dirname(pyspark.__file__)}


def _runtime_in_use() -> dict[str, str]:
    """Which runtime bundle this driver imports (runtime/entry.py put it first on the path), and its Python."""
    import airflow_async_stream
    from airflow_async_stream.runtime.entry import MANIFEST

    site = os.path.dirname(os.path.dirname(os.path.abspath(airflow_async_stream.__file__)))
    try:
        with open(os.path.join(site, MANIFEST), encoding="utf-8") as file:
            bundle = str(json.load(file).get("key"))
    except (OSError, ValueError):
        bundle = "none"  # run from an installed package, not through a bundle
    return {"bundle": bundle, "from": site, "python": sys.version.split()[0], "executable": sys.executable}


class _OneLine(logging.Formatter):
    """Each of our lines one line: values from records (a stop request's reason) cannot add a line of their own
    to the driver log, nor move a terminal's cursor; a traceback keeps its lines."""

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        record.message = printable(record.message)
        return super().formatMessage(record)


def _log_our_lines() -> logging.Logger:
    """Our own lines go to the driver log at INFO whatever Spark's level (``logs.spark_level``) is."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_OneLine("%(asctime)s %(levelname)s airflow-async-stream: %(message)s", "%y/%m/%d %H:%M:%S"))
    logger = logging.getLogger("airflow_async_stream")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    logger.propagate = False
    return logger


def main(argv: list[str] | None = None) -> int:
    secrets = take_from_environment()  # first, so nothing this driver starts inherits them
    lineage = take_running_settings()
    log = _log_our_lines()
    redact = Redactor(secrets.secret_values | set(secret_values(lineage.transport if lineage else None)))
    args = parse_driver_arguments(sys.argv[1:] if argv is None else argv)
    control = ControlArea(args.control_area)
    deployment = control.read_deployment()
    job = (deployment.job if deployment else None) or "?"
    governor = Governor(control, args.deployment_id, job, redact)
    pyspark = _pyspark_in_use()
    governor.starting(
        secret_options=secrets.names(), pyspark=pyspark, spark_version=pyspark["version"], runtime=_runtime_in_use()
    )

    def on_sigterm(signum: int, frame: Any) -> None:
        governor.request_stop_from_signal()

    signal.signal(signal.SIGTERM, on_sigterm)
    try:
        judge_process_for(pyspark["version"], "the Spark it runs on")  # its rules, not the deploy's guess
        spec = load_submitted_spec(control, args)
        logs = spec.log_settings
        control.progress_retention = Retention(logs.progress_max_bytes, logs.progress_max_age_hours * 3600)
        governor.write_every(logs.write_interval_s(control.appendable))
        log.info(
            "deployment %s of job %s: Spark logs at %s; the progress log keeps %d bytes, %s hours",
            args.deployment_id,
            spec.name,
            spec.spark_conf_strings()["spark.log.level"],
            logs.progress_max_bytes,
            logs.progress_max_age_hours,
        )
        governor.watch_stability(spec.checkpoint, deployment.start_batch if deployment else None, spec.to_mapping())
        if governor.refused_start():  # before a SparkSession: a driver launched into a forced stop costs nothing
            return 0
        governor.lineage = running_events(spec, lineage, redact, partial(_kafka_servers, spec, secrets))
        run(spec, governor, secrets)
    except (SpecError, SettingsError) as exc:  # SettingsError: a Spark line this release does not know
        governor.fail(str(exc))
        print(f"airflow-async-stream: {redact(str(exc))}", file=sys.stderr)
        return EXIT_BAD_SPEC
    except Exception as exc:  # the status record must say why the driver died, whatever it was
        governor.fail(exc)
        print(redact("".join(traceback.format_exception(exc))), file=sys.stderr)  # secrets masked
        return EXIT_FAILED
    except BaseException as exc:
        governor.fail(exc)
        raise
    return EXIT_FAILED if governor.failed else 0


if __name__ == "__main__":
    sys.exit(main())
