"""The test session's private folders and environment: a private AIRFLOW_HOME with SQLite, a private dags
folder and checkpoint root, set before Airflow is imported (the root conftest imports this module first)."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from tests.spark_class_archive import CONF_DIR, SUBMIT_OPTS

REPO = Path(__file__).resolve().parent.parent
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="async-stream-tests-"))
DAGS_FOLDER = _SESSION_DIR / "dags"
CHECKPOINT_ROOT = _SESSION_DIR / "checkpoints"

shutil.copytree(REPO / "dags", DAGS_FOLDER, ignore=shutil.ignore_patterns("__pycache__"))
CHECKPOINT_ROOT.mkdir()
# Spark settings for every driver the tests start: see tests/spark_class_archive.py. The integration tests
# add a class-data-sharing archive of Spark to them (tests/integration/conftest.py).
CONF_DIR.mkdir(parents=True, exist_ok=True)
os.environ.update(
    {
        "AIRFLOW_HOME": str(_SESSION_DIR / "airflow-home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "ASYNC_STREAM_DEMO_ROOT": str(CHECKPOINT_ROOT),
        "AIRFLOW_ASYNC_STREAM_HOME": str(_SESSION_DIR / "registry"),
        # One runtime bundle for the session, whatever home a test gives itself (driver/bundle.py).
        "AIRFLOW_ASYNC_STREAM_BUNDLES": str(_SESSION_DIR / "bundles"),
        "SPARK_CONF_DIR": str(CONF_DIR),
        "SPARK_SUBMIT_OPTS": SUBMIT_OPTS,
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", ""),
    }
)
if not os.environ["PYSPARK_PYTHON"]:
    del os.environ["PYSPARK_PYTHON"]
