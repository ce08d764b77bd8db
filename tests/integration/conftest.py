"""Fixtures for integration tests: a migrated Airflow database, DAG runs, and no driver left behind."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import liveness
from tests.integration.helpers import USER_CODE
from tests.integration.standalone_cluster import standalone_cluster  # noqa: F401 (a fixture for the cluster tests)
from tests.session import CHECKPOINT_ROOT
from tests.spark_class_archive import ensure_archive, submit_opts
from tests.stores import store  # noqa: F401 (the object-store tests' S3 server or Azurite)


@pytest.fixture(scope="session", autouse=True)
def spark_class_archive() -> Path | None:
    """Every driver of the session maps Spark's classes from one archive (see tests/spark_class_archive.py)."""
    archive = ensure_archive()
    os.environ["SPARK_SUBMIT_OPTS"] = submit_opts(archive)
    return archive


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """`airflow db migrate` once per session, on the private SQLite database."""
    subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def checkpoint_dir() -> str:
    return str(CHECKPOINT_ROOT / f"ck-{uuid.uuid4().hex[:8]}")


@pytest.fixture(autouse=True)
def no_driver_left_behind() -> Iterator[None]:
    """After each test, stop (and if need be kill) any driver still live on a test checkpoint."""
    yield
    for control_dir in CHECKPOINT_ROOT.rglob("*.async-stream"):
        control = ControlArea(str(control_dir))
        if liveness(control.read_json(ControlArea.STATUS)).live:
            stop_driver(control, "test clean-up", graceful_timeout_s=5, kill_after_s=30)


@pytest.fixture
def user_code_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make tests/integration/user_code importable by the Spark driver (it inherits PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", str(USER_CODE))
    return USER_CODE


@pytest.fixture(scope="session")
def bare_python(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A Python with nothing installed (no pip, no site packages): what a cluster node has beside Spark."""
    venv = tmp_path_factory.mktemp("bare") / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    listed = subprocess.run(
        [str(python), "-c", "import site; print(site.getsitepackages()[0])"], capture_output=True, text=True, check=True
    )
    assert not any(Path(listed.stdout.strip()).iterdir()), "the bare Python has packages installed"
    return str(python)
