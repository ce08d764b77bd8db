"""What a module loads: the core (all but the Airflow adapters) imports and runs with Airflow absent, and a
rollout's apply step runs the migration's steps without Airflow's task machinery."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.session import REPO
from tests.unit.helpers import BLOCK_AIRFLOW

FORBIDDEN = (
    "airflow_async_stream.operators",
    "airflow_async_stream.sensors",
    "airflow_async_stream.triggers",
    "airflow_async_stream.factories.safe_disable",  # the TaskGroup module
)


def _loaded_after(module: str) -> list[str]:
    """The modules a fresh interpreter has loaded after importing ``module``."""
    code = f"import json, sys; import {module}; print(json.dumps(sorted(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return json.loads(result.stdout)


def test_the_rollouts_apply_module_loads_no_operator_sensor_or_taskgroup_module() -> None:
    loaded = _loaded_after("airflow_async_stream.rollout.apply")
    assert "airflow_async_stream.migrations.safe_disable_steps" in loaded  # it runs the migration's own steps
    wrong = [m for m in loaded if m == "airflow_async_stream.factories.safe_disable" or m.startswith(FORBIDDEN[:3])]
    assert wrong == [], f"rollout.apply loads {wrong}"


def test_the_factories_package_loads_a_factory_only_when_asked() -> None:
    loaded = _loaded_after("airflow_async_stream.factories")
    assert not [m for m in loaded if m.startswith(("airflow_async_stream.factories.", "airflow."))]
    code = "from airflow_async_stream.factories import safe_disable_async_progress as f; print(f.__module__)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "airflow_async_stream.factories.safe_disable"
    assert "airflow_async_stream.factories.safe_disable" not in _loaded_after("airflow_async_stream.migrations")


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


#: The Airflow adapters: everything else is the core, which imports and runs without Airflow.
AIRFLOW_SIDE = (
    "airflow_async_stream.hooks",
    "airflow_async_stream.operators",
    "airflow_async_stream.sensors",
    "airflow_async_stream.triggers",
    "airflow_async_stream.factories",  # the DAG and TaskGroup factories
    "airflow_async_stream.plugin",  # the streaming-jobs pages on the api-server
)


def _core_modules() -> list[str]:
    import pkgutil

    import airflow_async_stream

    names = [m.name for m in pkgutil.walk_packages(airflow_async_stream.__path__, "airflow_async_stream.")]
    return [n for n in names if not any(n == side or n.startswith(side + ".") for side in AIRFLOW_SIDE)]


def _without_airflow(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK_AIRFLOW + code, *args], capture_output=True, text=True, cwd=REPO, timeout=120
    )


def test_every_core_module_imports_with_airflow_blocked() -> None:
    modules = _core_modules()
    assert {"airflow_async_stream.driver.deploy", "airflow_async_stream.migrations.safe_disable_steps"} <= set(modules)
    assert {
        "airflow_async_stream.rollout.apply",
        "airflow_async_stream.driver.launcher",
        "airflow_async_stream.cli.commands",
    } <= set(modules)
    code = """
import importlib, json, traceback
failed = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except Exception as exc:
        failed[name] = f"{type(exc).__name__}: {exc}"
print(json.dumps(failed))
"""
    result = _without_airflow(code, *modules)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {}


def test_the_blocker_blocks(tmp_path: Path) -> None:
    """The check above means something: an Airflow-side module fails under the same blocker."""
    result = _without_airflow("import airflow_async_stream.hooks.spark_stream")
    assert "Airflow is blocked here: airflow" in result.stderr


def test_without_a_launcher_a_deploy_is_an_error_naming_the_connection_never_a_silent_local_run(
    tmp_path: Path,
) -> None:
    code = f"""
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.spec import parse_spec
spec = parse_spec({{"name": "j", "checkpoint": {str(tmp_path / "ck")!r}, "source": {{"format": "rate"}},
                   "sink": {{"format": "noop"}}}})
try:
    deploy_job(spec, Holder.this_process("test"), DeploySettings(conn_id="spark_prod"))
except Exception as exc:
    print(type(exc).__name__, exc)
"""
    result = _without_airflow(code)
    assert result.stdout.startswith("DeployError no launcher for connection 'spark_prod'"), result
    assert "LocalLauncher()" in result.stdout
    assert not (tmp_path / "ck.async-stream").exists()  # refused before anything was written
