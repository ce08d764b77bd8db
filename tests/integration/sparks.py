"""The Spark lines the version tests run beside the venv's own (scripts/sparks.sh installs them): each a pip
pyspark in its own folder, a whole Spark used as SPARK_HOME, as a user's cluster Spark would be."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_async_stream.driver.local import LocalLauncher

__all__ = ["OTHER_SPARKS", "spark_home", "launcher_for"]

#: The lines the full tier runs end to end beside the venv's 4.2.0: the most deployed (3.5) and the newest.
OTHER_SPARKS = ("3.5.9", "4.3.0")
ROOT = Path(os.environ.get("ASYNC_STREAM_SPARKS") or Path.home() / ".cache" / "airflow-async-stream" / "sparks")


def spark_home(version: str) -> Path:
    """The installed Spark of ``version``; the test fails naming the command when it is not there."""
    home = ROOT / version / "pyspark"
    if not (home / "bin" / "spark-submit").exists():
        pytest.fail(f"Spark {version} is not installed in {ROOT}: run `bash scripts/sparks.sh {version}`")
    return home


def launcher_for(version: str, master: str = "local[2]") -> LocalLauncher:
    """Drivers on this host with that Spark's spark-submit, as the Spark provider runs one from SPARK_HOME."""
    home = spark_home(version)
    return LocalLauncher(base=[str(home / "bin" / "spark-submit"), "--master", master], env={"SPARK_HOME": str(home)})
