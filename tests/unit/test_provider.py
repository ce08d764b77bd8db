"""The provider registers with Airflow through its entry point, and every module it names imports."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

from airflow_async_stream import get_provider_info


def test_entry_point_leads_to_get_provider_info() -> None:
    found = [ep for ep in entry_points(group="apache_airflow_provider") if ep.value.startswith("airflow_async_stream")]
    assert len(found) == 1 and found[0].load() is get_provider_info


def test_every_named_module_imports() -> None:
    info = get_provider_info()
    modules = [
        m
        for kind in ("hooks", "operators", "sensors", "triggers")
        for entry in info[kind]
        for m in entry["python-modules"]
    ]
    assert len(modules) >= 5
    for module in modules:
        importlib.import_module(module)


def test_airflow_providers_manager_lists_the_provider() -> None:
    from airflow.providers_manager import ProvidersManager

    assert "airflow-async-stream" in ProvidersManager().providers


def test_the_declared_airflow_floor_is_one_the_suite_runs_and_has_what_the_sensor_needs() -> None:
    """pyproject.toml admits no Airflow older than the one tested: 3.3 brought the task state store."""
    import re
    from importlib.metadata import version
    from pathlib import Path

    from airflow_async_stream.sensors.committed_batches import _airflow_keeps_task_state

    pyproject = (Path(__file__).resolve().parents[2] / "pyproject.toml").read_text()
    (floor,) = re.findall(r'^\s*"apache-airflow>=([\d.]+),<4",', pyproject, re.MULTILINE)
    installed = tuple(int(part) for part in version("apache-airflow").split(".")[:2])
    assert tuple(int(part) for part in floor.split(".")) == (3, 3) <= installed
    assert _airflow_keeps_task_state()


def test_the_settings_are_in_airflows_config_with_their_defaults() -> None:
    """`airflow config list` shows them: Airflow knows them from get_provider_info() (plugin/ reads them)."""
    import subprocess
    import sys
    from pathlib import Path

    airflow = str(Path(sys.executable).parent / "airflow")
    shown = subprocess.run(
        [airflow, "config", "list", "--section", "async_stream", "--include-descriptions"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "[async_stream]" in shown and "# fleet_indexes = \n" in shown and "# checkpoint_folders = \n" in shown
    assert "Fleet indexes (the `index:` of a desired folder's _fleet.yaml)" in shown
    assert "# lineage_running_every_minutes = \n" in shown
    assert "# spec_variables = " in shown
    from airflow.configuration import conf

    assert conf.get_default_value("async_stream", "spec_variables") == "ASYNC_STREAM_*"  # what specs may read
    assert get_provider_info()["config"]["async_stream"]["options"].keys() == {
        "fleet_indexes",
        "checkpoint_folders",
        "spec_variables",
        "lineage_running_every_minutes",
    }
