"""The Spark lines the version tests run beside the venv's own (scripts/sparks.sh installs them): each a pip
pyspark in its own folder, a whole Spark used as SPARK_HOME, as a user's cluster Spark would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.local import LocalLauncher

__all__ = ["EVERY_SPARK", "OTHER_SPARKS", "launcher_for", "run_script", "spark_home", "submit"]

#: The lines the full tier runs end to end beside the venv's 4.2.0: the most deployed (3.5) and the newest.
#: ``ASYNC_STREAM_SPARK_LINES=3.5.9,4.0.5,4.1.4,4.3.0`` runs them on more lines (each installed by scripts/sparks.sh).
OTHER_SPARKS = tuple(v for v in os.environ.get("ASYNC_STREAM_SPARK_LINES", "3.5.9,4.3.0").split(",") if v.strip())
#: The venv's own pyspark (the embedded Spark) first.
EVERY_SPARK = (metadata.version("pyspark"), *OTHER_SPARKS)
ROOT = Path(
    os.environ.get("ASYNC_STREAM_SPARKS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "airflow-async-stream" / "sparks"
)


#: The full tier installs the lines beside the tests (scripts/test.sh): the installer's pid and its log.
_INSTALLER = os.environ.get("ASYNC_STREAM_SPARKS_PID")
_WAIT_S = 900.0


def _installing() -> bool:
    if not _INSTALLER:
        return False
    try:
        os.kill(int(_INSTALLER), 0)
    except (OSError, ValueError):
        return False
    return True


def spark_home(version: str) -> Path:
    """The installed Spark of ``version`` (waiting for the full tier's installer while it runs); the test fails
    naming the command when it is not there."""
    if version == metadata.version("pyspark"):
        from tests.spark_class_archive import spark_home as installed

        return installed()
    home = ROOT / version / "pyspark"
    deadline = time.monotonic() + _WAIT_S
    while not (ROOT / version / ".complete").exists() and _installing() and time.monotonic() < deadline:
        time.sleep(1)  # a process of another test run: no event to wait on
    if not (ROOT / version / ".complete").exists():
        log = Path(os.environ.get("ASYNC_STREAM_SPARKS_LOG") or "/nonexistent")
        said = log.read_text()[-2000:] if log.exists() else ""
        pytest.fail(f"Spark {version} is not installed in {ROOT}: run `bash scripts/sparks.sh {version}`\n{said}")
    return home


def launcher_for(version: str, master: str = "local[2]") -> LocalLauncher:
    """Drivers on this host with that Spark's spark-submit, as the Spark provider runs one from SPARK_HOME."""
    home = spark_home(version)
    return LocalLauncher(base=[str(home / "bin" / "spark-submit"), "--master", master], env={"SPARK_HOME": str(home)})


def run_script(version: str, script: Path, *args: str, timeout_s: float = 300) -> str:
    """Run a plain PySpark script with that Spark's spark-submit (this venv's Python, so it can import the
    provider); its output, once it exited 0."""
    home = spark_home(version)
    python = {"PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    command = [str(home / "bin" / "spark-submit"), "--master", "local[2]", str(script), *args]
    env = {**os.environ, "SPARK_HOME": str(home), **python}
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def submit(version: str, script: Path, *args: str, timeout_s: float = 300) -> dict[str, Any]:
    """``run_script``, and the JSON of the last line of its output."""
    return dict(json.loads(run_script(version, script, *args, timeout_s=timeout_s).strip().splitlines()[-1]))
