"""Test set-up: a private AIRFLOW_HOME with SQLite and a private dags folder, made before Airflow is imported.

Unit tests (tests/unit) need neither a JVM nor an Airflow database. Integration tests (tests/integration,
marker ``integration``) run real PySpark drivers and real Airflow DAG runs through ``dag.test()``.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
_SESSION_DIR = Path(tempfile.mkdtemp(prefix="async-stream-tests-"))
DAGS_FOLDER = _SESSION_DIR / "dags"
CHECKPOINT_ROOT = _SESSION_DIR / "checkpoints"

shutil.copytree(REPO / "dags", DAGS_FOLDER, ignore=shutil.ignore_patterns("__pycache__"))
CHECKPOINT_ROOT.mkdir()
# Spark settings for every driver the tests start (spark-submit reads $SPARK_CONF_DIR/spark-defaults.conf;
# a spec's spark_conf still wins). The tests start over 100 short-lived drivers: no web UI, and the JVM's
# quick C1 compiler only, which cut a driver start (deploy to first micro-batch) by about 15 % here.
SPARK_CONF_DIR = _SESSION_DIR / "spark-conf"
SPARK_CONF_DIR.mkdir()
(SPARK_CONF_DIR / "spark-defaults.conf").write_text(
    "spark.ui.enabled false\n"
    "spark.driver.extraJavaOptions -XX:TieredStopAtLevel=1 -XX:+UseSerialGC\n"
)
os.environ.update(
    {
        "AIRFLOW_HOME": str(_SESSION_DIR / "airflow-home"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "AIRFLOW__LOGGING__LOGGING_LEVEL": "INFO",
        "ASYNC_STREAM_DEMO_ROOT": str(CHECKPOINT_ROOT),
        "AIRFLOW_ASYNC_STREAM_HOME": str(_SESSION_DIR / "registry"),
        "SPARK_CONF_DIR": str(SPARK_CONF_DIR),
        "PYSPARK_PYTHON": os.environ.get("PYSPARK_PYTHON", ""),
    }
)
if not os.environ["PYSPARK_PYTHON"]:
    del os.environ["PYSPARK_PYTHON"]


def pytest_collection_modifyitems(config: Any, items: list[Any]) -> None:
    """Every test belongs to a tier: tests/unit are quick; tests/integration must say `integration`.

    The quick tier (`scripts/test.sh --quick`, ``-m quick``) is every unit test plus the integration tests
    also marked ``quick``; the full tier is every test.
    """
    import pytest

    unit, integration = REPO / "tests" / "unit", REPO / "tests" / "integration"
    for item in items:
        path = Path(str(item.path))
        if path.is_relative_to(unit):
            item.add_marker(pytest.mark.quick)
        elif path.is_relative_to(integration) and item.get_closest_marker("integration") is None:
            raise pytest.UsageError(f"{item.nodeid}: an integration test must carry pytest.mark.integration")
