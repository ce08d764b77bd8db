"""The runtime bundle: built once, reused, complete for a Python with nothing of ours installed, and told apart
from a Python it was not built for."""

from __future__ import annotations

import json
import os
import pkgutil
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

import airflow_async_stream.runtime
from airflow_async_stream.driver import bundle
from airflow_async_stream.driver.bundle import Bundle, runtime_bundle
from airflow_async_stream.exceptions import DeployError

_SPARK_ZIPS = sorted(str(p) for p in (Path(pyspark.__file__).parent / "python" / "lib").glob("*.zip"))


def _fresh(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "bundles"
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_BUNDLES", str(folder))
    monkeypatch.setattr(bundle, "_KNOWN", {})
    return folder


def test_a_bundle_is_built_once_and_reused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = _fresh(tmp_path, monkeypatch)
    caplog.set_level("INFO", logger="airflow_async_stream.driver.bundle")
    first = runtime_bundle()
    assert first.built_s > 0 and first.folder.parent == folder
    assert f"Building the runtime bundle {first.key}" in caplog.text  # a first deploy says why it waits
    monkeypatch.setattr(bundle, "_KNOWN", {})  # another process: it looks again, and finds it built
    again = runtime_bundle()
    assert again == Bundle(first.folder) and again.built_s == 0.0
    assert [p.name for p in folder.iterdir()] == [first.key]  # nothing left aside
    manifest = first.manifest()
    assert manifest["python"] == f"{sys.version_info.major}.{sys.version_info.minor}"
    assert {"pydantic", "pydantic-core", "pyyaml", "fsspec", "typing-extensions"} <= set(manifest["distributions"])
    assert "apache-airflow" not in manifest["distributions"] and "pyspark" not in manifest["distributions"]
    assert first.entry.read_bytes() == (Path(airflow_async_stream.runtime.__file__).parent / "entry.py").read_bytes()


def test_a_python_with_only_spark_imports_the_whole_runtime_from_the_bundle(tmp_path: Path) -> None:
    """``-I -S``: no site-packages, no PYTHONPATH: what a cluster's Python has (Spark's own zips aside)."""
    built = runtime_bundle()
    modules = [
        f"airflow_async_stream.runtime.{m.name}" for m in pkgutil.iter_modules(airflow_async_stream.runtime.__path__)
    ]
    script = (
        "import importlib, sys, json\n"
        f"sys.path[:0] = {[str(built.site), *_SPARK_ZIPS]!r}\n"
        f"for name in {modules!r}: importlib.import_module(name)\n"
        "import airflow_async_stream, pydantic_core\n"
        "print(json.dumps([airflow_async_stream.__file__, pydantic_core.__file__]))\n"
    )
    result = subprocess.run([sys.executable, "-I", "-S", "-c", script], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert all(Path(f).is_relative_to(built.site) for f in json.loads(result.stdout))


def test_a_remote_control_area_ships_its_client() -> None:
    local, s3 = runtime_bundle(), runtime_bundle(["s3a"])  # the session's: the S3 driver test reuses it
    assert local.key != s3.key
    assert "s3fs" in s3.manifest()["distributions"] and "s3fs" not in local.manifest()["distributions"]
    assert (s3.site / "s3fs" / "__init__.py").is_file() and (s3.site / "botocore").is_dir()


def test_a_client_not_installed_here_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _fresh(tmp_path, monkeypatch)
    monkeypatch.setitem(bundle._CLIENTS, "gs", "no-such-fsspec-client")
    with pytest.raises(DeployError, match="a control area on gs:// needs no-such-fsspec-client .* pip install"):
        runtime_bundle(["gs"])


def test_another_worker_building_the_same_bundle_first_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Two workers deploy at once: the one that renames second keeps the first one's bundle, leaves nothing."""
    folder = _fresh(tmp_path, monkeypatch)
    real_build = bundle._build

    def build_while_another_finishes(building: Path, *args: object) -> None:
        real_build(building, *args)  # type: ignore[arg-type]
        winner = folder / building.name[1:].rsplit("-", 1)[0]  # ".<key>-<random>"
        shutil.copytree(building, winner)  # the other worker's rename lands first
        (winner / "site" / "winner").write_text("")

    monkeypatch.setattr(bundle, "_build", build_while_another_finishes)
    built = runtime_bundle()
    assert (built.site / "winner").is_file()
    assert [p.name for p in folder.iterdir()] == [built.key]


def _entry_with(tmp_path: Path, manifest: dict[str, str] | None) -> subprocess.CompletedProcess[str]:
    folder = tmp_path / "b"
    (folder / "site").mkdir(parents=True)
    shutil.copy(Path(airflow_async_stream.runtime.__file__).parent / "entry.py", folder / "driver.py")
    if manifest is not None:
        (folder / "site" / "bundle.json").write_text(json.dumps(manifest))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run(
        [sys.executable, "-I", str(folder / "driver.py"), "--control-area", "x"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
    )


def test_a_driver_python_the_bundle_was_not_built_for_is_told_which_it_needs(tmp_path: Path) -> None:
    built = runtime_bundle().manifest()
    result = _entry_with(tmp_path, {**{k: str(v) for k, v in built.items()}, "python": "3.9"})
    assert result.returncode == 2
    assert f"built for cpython 3.9 on {built['platform']}" in result.stderr
    assert f"this driver's Python ({sys.executable}) is cpython {built['python']}" in result.stderr
    assert "set spark.pyspark.driver.python and spark.pyspark.python to a Python 3.9" in result.stderr


def test_a_driver_without_its_bundle_says_so(tmp_path: Path) -> None:
    result = _entry_with(tmp_path, None)
    assert result.returncode == 2
    assert "no runtime bundle beside" in result.stderr and "./async-stream-runtime" in result.stderr


def test_a_cluster_driver_finds_the_archive_spark_extracted_into_its_working_folder(tmp_path: Path) -> None:
    from airflow_async_stream.runtime.entry import bundle_site

    extracted = tmp_path / "container" / "async-stream-runtime"
    extracted.mkdir(parents=True)
    (extracted / "bundle.json").write_text("{}")
    assert bundle_site(str(tmp_path / "uploaded"), str(tmp_path / "container")) == str(extracted)
    assert bundle_site(str(tmp_path / "uploaded"), str(tmp_path)) is None


def _fake_python(tmp_path: Path, name: str, body: str) -> str:
    path = tmp_path / name
    path.write_text(f"#!/bin/sh\n{body}\n")
    path.chmod(0o755)
    return str(path)


def test_a_driver_python_on_this_host_that_cannot_import_the_bundle_is_refused_before_submit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_async_stream.driver.bundle import refuse_driver_python
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.spec.load import parse_spec
    from tests.helpers import rate_noop

    old = _fake_python(tmp_path, "python3.9", "echo cpython 3 9 linux-x86_64")
    spec = parse_spec(rate_noop("j", "/ck/j", spark_conf={"spark.pyspark.python": old}))
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    where = LocalLauncher().driver_python(spec)
    assert where == (old, "spark_conf.spark.pyspark.python")
    with pytest.raises(
        DeployError,
        match=rf"^spark_conf.spark.pyspark.python: {old} is cpython 3.9 on linux-x86_64, "
        rf"but the runtime shipped with the job fits cpython {sys.version_info.major}.{sys.version_info.minor}",
    ):
        refuse_driver_python(*where)
    with pytest.raises(DeployError, match=r"^here: /no/such/python does not run here"):
        refuse_driver_python("/no/such/python", "here")
    same = _fake_python(tmp_path, "python", f'exec {sys.executable} "$@"')  # another path to this very Python
    refuse_driver_python(same, "spark_conf.spark.pyspark.driver.python")
    monkeypatch.setenv("PYSPARK_DRIVER_PYTHON", same)
    assert LocalLauncher().driver_python(parse_spec(rate_noop("j", "/ck/j"))) == (
        same,
        "the environment's PYSPARK_DRIVER_PYTHON",
    )


def test_a_bundles_folder_this_host_cannot_write_is_named(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the folder should be: no user, root included, makes a folder in it
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_BUNDLES", str(blocked / "bundles"))
    monkeypatch.setattr(bundle, "_KNOWN", {})
    with pytest.raises(DeployError, match=rf"cannot be built in {blocked}/bundles .*AIRFLOW_ASYNC_STREAM_BUNDLES"):
        runtime_bundle()
