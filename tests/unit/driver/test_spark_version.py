"""Which Spark a spark-submit submits to (driver/spark_version.py): its banner read once per binary, an upgrade
in place asked again, a connection's word taken over it, and the Kafka connector built for that Spark. The
spark-submit here is a script that prints Spark 3.5.9's banner as ``spark-submit --version`` does and counts
how often it ran."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.maven_packages import packages_conf
from airflow_async_stream.driver.spark_version import SparkBuild, target_build
from airflow_async_stream.exceptions import DeployError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import SecretOptions
from tests.helpers import rate_noop

#: What Spark 3.5.9's `spark-submit --version` writes (to stderr), seen here.
BANNER_35 = r"""Welcome to
      ____              __
     / __/__  ___ _____/ /__
    _\ \/ _ \/ _ `/ __/  '_/
   /___/ .__/\_,_/_/ /_/\_\   version 3.5.9
      /_/

Using Scala version 2.12.18, OpenJDK 64-Bit Server VM, 17.0.15
Branch HEAD
"""


@pytest.fixture
def spark_submit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "home"))
    home = tmp_path / "spark-3.5.9"
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    (home / "banner").write_text(BANNER_35)
    binary = home / "bin" / "spark-submit"
    binary.write_text(f'#!/usr/bin/env bash\necho run >> "{home}/runs"\ncat "{home}/banner" >&2\n')
    binary.chmod(0o755)
    return binary


def _runs(binary: Path) -> int:
    runs = binary.parent.parent / "runs"
    return len(runs.read_text().splitlines()) if runs.exists() else 0


def test_the_banner_is_read_once_per_binary_and_again_after_an_upgrade(spark_submit: Path) -> None:
    build = target_build(str(spark_submit), {}, {})
    assert (build.version, build.scala) == ("3.5.9", "2.12") and build.source == str(spark_submit)
    again = LocalLauncher(base=[str(spark_submit), "--master", "local[2]"]).spark()
    assert (again.version, again.scala) == ("3.5.9", "2.12") and "asked before" in again.source
    assert _runs(spark_submit) == 1
    # An upgrade in place (new jars, a new banner): asked again.
    (spark_submit.parent.parent / "banner").write_text(BANNER_35.replace("3.5.9", "3.5.10"))
    jars = spark_submit.parent.parent / "jars"
    os.utime(jars, ns=(jars.stat().st_atime_ns, jars.stat().st_mtime_ns + 10**9))
    assert target_build(str(spark_submit), {}, {}).version == "3.5.10"
    assert _runs(spark_submit) == 2


def test_a_connection_naming_the_clusters_spark_is_taken_without_asking(spark_submit: Path) -> None:
    build = target_build(str(spark_submit), {}, {"spark_version": "4.1.4"})
    assert (build.version, build.scala) == ("4.1.4", "2.13") and "extra spark_version" in build.source
    assert target_build(str(spark_submit), {}, {"spark_version": "3.5.2"}).scala == "2.12"
    assert _runs(spark_submit) == 0
    with pytest.raises(DeployError, match=r"extra spark_version: 'five' is not a Spark version"):
        target_build(str(spark_submit), {}, {"spark_version": "five"})
    with pytest.raises(DeployError, match=r"Spark 3\.4\.1 is not a line this release supports \(3\.5, 4\.0"):
        target_build(str(spark_submit), {}, {"spark_version": "3.4.1"})


def test_a_spark_submit_that_names_no_version_is_an_error(spark_submit: Path) -> None:
    (spark_submit.parent.parent / "banner").write_text("Error: JAVA_HOME is not set\n")
    with pytest.raises(DeployError, match=r"--version` named no Spark version \(exit 0\): Error: JAVA_HOME"):
        target_build(str(spark_submit), {}, {})


def test_kafka_jobs_get_the_connector_of_the_targets_spark_and_scala(spark_submit: Path) -> None:
    kafka = parse_spec(rate_noop("k", sink={"format": "kafka", "options": {"topic": "t"}}))
    spark = target_build(str(spark_submit), {}, {})
    assert packages_conf(kafka, {}, spark) == {
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.12:3.5.9"
    }
    newer = SparkBuild("4.3.0", "2.13", "a test")
    assert packages_conf(kafka, {}, newer) == {
        "spark.jars.packages": "org.apache.spark:spark-sql-kafka-0-10_2.13:4.3.0"
    }
    assert packages_conf(kafka, {"kafka_package": ""}, spark) == {}  # the cluster ships the jar
    own = parse_spec(rate_noop("k", sink={"format": "kafka"}, spark_conf={"spark.jars.packages": "x:y:1"}))
    assert packages_conf(own, {}, spark) == {}
    assert packages_conf(parse_spec(rate_noop("plain")), {}, spark) == {}
    submission = Submission.for_spec(kafka, "/ck/k.async-stream", "d-1", SecretOptions(), {}, spark)
    assert submission.conf["spark.jars.packages"].endswith("_2.12:3.5.9")


def test_an_embedded_pyspark_that_differs_from_pyspark_client_is_refused_naming_both(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As a venv looks after the apache-spark provider brought pyspark-client 4.3.0 beside a pyspark 4.1.4
    (the versions are read from the installed distributions; here they are stood in for)."""
    from airflow_async_stream.driver import local

    assert local.spark_submit_binary().endswith("spark-submit")  # this venv's pair agrees
    installed = {"pyspark": "4.1.4", "pyspark-client": "4.3.0"}
    monkeypatch.setattr(local.metadata, "version", lambda name: installed[name])
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(DeployError, match=r"pyspark 4\.1\.4 and pyspark-client 4\.3\.0 \(the apache-spark provider"):
        local.spark_submit_binary()
