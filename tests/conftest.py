"""Test set-up: a private AIRFLOW_HOME with SQLite and a private dags folder, made before Airflow is imported.

Unit tests (tests/unit) need neither a JVM nor an Airflow database. Integration tests (tests/integration,
marker ``integration``) run real PySpark drivers and real Airflow DAG runs through ``dag.test()``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.session import REPO


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
