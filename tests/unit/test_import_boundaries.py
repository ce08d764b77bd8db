"""What a module loads: a rollout's apply step runs the migration's steps without Airflow's task machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

FORBIDDEN = (
    "airflow_async_stream.operators",
    "airflow_async_stream.sensors",
    "airflow_async_stream.triggers",
    "airflow_async_stream.migrations.safe_disable",  # the TaskGroup module
)


def _loaded_after(module: str) -> list[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_the_rollouts_apply_module_loads_no_operator_sensor_or_taskgroup_module() -> None:
    loaded = _loaded_after("airflow_async_stream.rollout.apply")
    assert "airflow_async_stream.migrations.safe_disable_steps" in loaded  # it runs the migration's own steps
    wrong = [m for m in loaded if m == "airflow_async_stream.migrations.safe_disable" or m.startswith(FORBIDDEN[:3])]
    assert wrong == [], f"rollout.apply loads {wrong}"


def test_the_migrations_package_builds_its_taskgroup_only_when_asked() -> None:
    loaded = _loaded_after("airflow_async_stream.migrations")
    assert "airflow_async_stream.migrations.safe_disable" not in loaded
    code = "from airflow_async_stream.migrations import safe_disable_async_progress; print(safe_disable_async_progress.__module__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "airflow_async_stream.migrations.safe_disable"


def test_the_provider_uses_no_task_sdk_internals() -> None:
    """Airflow's execution-time modules are internal: tasks reach Airflow through the task instance in their
    context (e.g. ``ti.get_dagrun_state``). The one exception: the connection lookup asks each secrets backend
    itself, since Airflow's public lookup answers "not found" also when a backend failed."""
    import ast

    package = Path(__file__).resolve().parents[2] / "airflow_async_stream"
    allowed = {Path("hooks/connection_lookup.py")}
    offenders = []
    for path in package.rglob("*.py"):
        if path.relative_to(package) in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            names += [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            offenders += [
                f"{path.relative_to(package)}: {n}" for n in names if n.startswith("airflow.sdk.execution_time")
            ]
    assert not offenders, offenders
