"""What each target's command line ships with a driver: the runtime bundle, the job's application and Python files.

YARN and Kubernetes are mocked (a stub `spark-submit` records its arguments; no cluster runs here); local and
standalone client mode build the command the real tests run (tests/integration/test_bare_driver.py,
test_standalone_cluster.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_async_stream.driver.bundle import ARCHIVE_ALIAS, runtime_bundle
from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.spark_version import SparkBuild
from airflow_async_stream.exceptions import DeployError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.unit.hooks.cluster_stubs import calls as _calls
from tests.unit.hooks.cluster_stubs import connection as _connection
from tests.unit.hooks.cluster_stubs import stub as _stub

SPARK = SparkBuild("4.1.1", "2.13", "the Spark connection's extra spark_version")
APP = {
    **rate_noop("clicks", "hdfs://nn:8020/ck/clicks", python_dependencies=["/opt/libs/helpers.zip"]),
    "application": "/opt/apps/clicks.py",
    "spark_conf": {"spark.archives": "hdfs:///envs/geo.tar.gz#geo", "spark.submit.pyFiles": "hdfs:///libs/x.py"},
}
del APP["source"], APP["sink"]


def _submitted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, conn: str, output: str, spec: dict) -> list[str]:
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "spark-submit", output)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    launcher = launcher_for(conn)
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    submission = Submission.for_spec(parse_spec(spec), control.url, "d1", SecretOptions(), {}, SPARK)
    launcher.launch(submission, control)
    [submitted] = _calls(bin_dir, "spark-submit")
    return submitted


def _option(command: list[str], name: str) -> str:
    return command[command.index(name) + 1]


def test_yarn_cluster_mode_mocked_ships_the_bundle_the_application_and_its_files(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster"})
    command = _submitted(
        monkeypatch, tmp_path, "spark_yarn", "INFO Client: Submitted application application_1700000000000_0042", APP
    )
    bundle = runtime_bundle(["hdfs"])
    # One --archives, the runtime first (extracted where its entry looks), the job's own environment kept.
    assert _option(command, "--archives") == f"{bundle.archive}#{ARCHIVE_ALIAS},hdfs:///envs/geo.tar.gz#geo"
    assert _option(command, "--py-files") == "/opt/libs/helpers.zip,hdfs:///libs/x.py,/opt/apps/clicks.py"
    assert not any(arg.startswith(("spark.archives=", "spark.submit.pyFiles=")) for arg in command)
    assert command[command.index("--deploy-mode") + 2] == str(bundle.entry)  # the primary resource: its entry


def test_kubernetes_mocked_needs_an_upload_folder_for_what_it_ships(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _connection(monkeypatch, "spark_k8s", "k8s://https://k8s.example:6443", **{"deploy-mode": "cluster"})
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "conf"))
    monkeypatch.setattr("airflow_async_stream.hooks.spark_stream.spark_submit.kube_client", object(), raising=False)
    launcher = launcher_for("spark_k8s")
    spec = parse_spec(rate_noop("clicks", "s3a://bucket/ck/clicks"))
    with pytest.raises(DeployError, match=r"^spark_conf: spark.kubernetes.file.upload.path is not set .*s3a://"):
        launcher.check(spec)
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "spark-defaults.conf").write_text("spark.kubernetes.file.upload.path  s3a://b/up\n")
    assert "cluster mode on kubernetes" in launcher.check(spec)  # the client's defaults give it
    (tmp_path / "conf" / "spark-defaults.conf").write_text("")
    with_folder = rate_noop(
        "clicks", "s3a://bucket/ck/clicks", spark_conf={"spark.kubernetes.file.upload.path": "s3a://b/up"}
    )
    assert "cluster mode on kubernetes" in launcher.check(parse_spec(with_folder))


def test_local_and_client_mode_put_the_jobs_python_files_on_the_drivers_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", "spark://10.0.0.5:7077")
    spec = parse_spec(rate_noop("clicks", "/ck/clicks", python_dependencies=["/opt/libs/helpers.zip"]))
    submission = Submission.for_spec(spec, "/ck/clicks.async-stream", "d1", SecretOptions(), {}, SPARK)
    for launcher in (launcher_for("no_such_connection"), launcher_for("spark_standalone")):
        command = launcher.command(submission)  # type: ignore[attr-defined]
        assert _option(command, "--py-files") == "/opt/libs/helpers.zip"
        entry = command.index(str(runtime_bundle().entry))
        assert command[entry - 2 : entry] == ["--name", "async-stream-clicks"]
        assert "--archives" not in command  # the driver runs here: its bundle's folder is beside its entry


def test_a_file_py_files_cannot_carry_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"python_dependencies.0: must be a .py, .zip or .egg file .*venv-pack"):
        parse_spec(rate_noop("clicks", "/ck/clicks", python_dependencies=["/opt/libs/geo-1.0-cp311.whl"]))
    with pytest.raises(ValueError, match=r"python_dependencies.0: must be an absolute path or a URL"):
        parse_spec(rate_noop("clicks", "/ck/clicks", python_dependencies=["libs/helpers.zip"]))
