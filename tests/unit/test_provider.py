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
