"""What each target's command line ships with a driver: the runtime bundle, the job's application and Python files.

YARN and Kubernetes are mocked (a stub `spark-submit` records its arguments; no cluster runs here); local and
standalone client mode build the command the real tests run (tests/integration/test_bare_driver.py,
test_standalone_cluster.py).
"""

from __future__ import annotations

import os
from pathlib import Path

import fsspec
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
    tmp_path.mkdir(parents=True, exist_ok=True)
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
    remote = {**APP, "checkpoint": "/ck/clicks", "application": "s3a://b/apps/clicks.py", "spark_conf": {}}
    submission = Submission.for_spec(parse_spec(remote), "/ck/clicks.async-stream", "d1", SecretOptions(), {}, SPARK)
    command = launcher_for("spark_standalone").command(submission)  # type: ignore[attr-defined]
    assert _option(command, "--py-files") == "/opt/libs/helpers.zip,s3a://b/apps/clicks.py"  # fetched onto the path


def test_a_file_py_files_cannot_carry_is_refused_naming_the_field() -> None:
    with pytest.raises(ValueError, match=r"python_dependencies.0: must be a .py, .zip or .egg file .*venv-pack"):
        parse_spec(rate_noop("clicks", "/ck/clicks", python_dependencies=["/opt/libs/geo-1.0-cp311.whl"]))
    with pytest.raises(ValueError, match=r"python_dependencies.0: must be an absolute path or a URL"):
        parse_spec(rate_noop("clicks", "/ck/clicks", python_dependencies=["libs/helpers.zip"]))


def test_a_bundle_folder_keeps_one_copy_the_cluster_reads_and_mends_a_rewritten_one(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """fsspec's in-memory storage stands in for HDFS or S3 here."""
    memory = fsspec.filesystem("memory")
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster", "bundle_folder": "memory://bundles/"})
    submitted = "INFO Client: Submitted application application_1700000000000_0042"
    bundle = runtime_bundle(["hdfs"])
    copy = f"memory://bundles/{bundle.key}"
    try:
        command = _submitted(monkeypatch, tmp_path / "one", "spark_yarn", submitted, APP)
        assert _option(command, "--archives").split(",")[0] == f"{copy}/runtime.zip#{ARCHIVE_ALIAS}"
        assert command[command.index("--deploy-mode") + 2] == f"{copy}/driver.py"  # no file of this host
        assert memory.cat_file(f"/bundles/{bundle.key}/runtime.zip") == bundle.archive.read_bytes()
        memory.pipe_file(f"/bundles/{bundle.key}/driver.py", b"import os; os.system('evil')")
        _submitted(monkeypatch, tmp_path / "two", "spark_yarn", submitted, APP)
        assert memory.cat_file(f"/bundles/{bundle.key}/driver.py") == bundle.entry.read_bytes()  # mended
        assert "driver.py differs from this host's runtime bundle" in caplog.text
    finally:
        if memory.exists("/bundles"):
            memory.rm("/bundles", recursive=True)


def test_a_bundle_folder_must_be_storage_a_cluster_reads(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster", "bundle_folder": "/srv/bundles"})
    with pytest.raises(DeployError, match="connection extra bundle_folder: /srv/bundles is not storage a cluster"):
        _submitted(monkeypatch, tmp_path, "spark_yarn", "", APP)


def test_kubernetes_mocked_with_a_bundle_folder_and_remote_files_needs_no_upload_folder(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    extra = {"deploy-mode": "cluster", "bundle_folder": "s3a://b/bundles"}
    _connection(monkeypatch, "spark_k8s", "k8s://https://k8s.example:6443", **extra)
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path / "no-conf"))
    monkeypatch.setattr("airflow_async_stream.hooks.spark_stream.spark_submit.kube_client", object(), raising=False)
    launcher = launcher_for("spark_k8s")
    remote = {**APP, "checkpoint": "s3a://b/ck/clicks", "application": "s3a://b/apps/clicks.py", "spark_conf": {}}
    assert "cluster mode on kubernetes" in launcher.check(parse_spec({**remote, "python_dependencies": []}))
    with pytest.raises(DeployError, match="spark.kubernetes.file.upload.path is not set"):
        launcher.check(parse_spec(remote))  # its python_dependencies are a file of this host
