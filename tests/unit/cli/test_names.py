"""A job name resolves the same on every host: this host's registry first, then the fleet indexes and checkpoint
folders of the provider's ``[async_stream]`` settings (the page's sources); as on a host that deployed
nothing (an empty registry, the settings only from Airflow's environment variables)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from tests.helpers import make_checkpoint
from tests.unit.cli_run import Ran, cli
from tests.unit.helpers import fake_deployment


def _other_host(tmp_path: Path, *args: str, **settings: str) -> Ran:
    """The CLI on a host whose registry is empty, its ``[async_stream]`` options set through Airflow's env."""
    env: dict[str, str | None] = dict.fromkeys(k for k in os.environ if k.startswith("AIRFLOW__ASYNC_STREAM__"))
    env["AIRFLOW_ASYNC_STREAM_HOME"] = str(tmp_path / "empty-home")
    env |= {f"AIRFLOW__ASYNC_STREAM__{option.upper()}": value for option, value in settings.items()}
    return cli(*args, env=env)


def _job(root: Path, folder: str, name: str) -> ControlArea:
    """fake_deployment's job, deployed as ``name`` on the checkpoint ``root/folder``; its driver writes its status
    every 10 minutes, so its heartbeat stays fresh through the CLI calls however loaded the host is."""
    os.rename(fake_deployment(root).root, f"{root / folder}.async-stream")
    control = ControlArea(f"{root / folder}.async-stream")
    for record in ("status.json", "deployment.json"):
        control.write_json(record, {**control.read_json(record), "job": name, "checkpoint": str(root / folder)})
    control.write_json("status.json", {**control.read_json("status.json"), "write_interval_s": 600})
    make_checkpoint(root / folder, [0, 1], [0, 1])
    return control


def test_a_name_resolves_through_the_fleet_index_setting_on_a_host_that_deployed_nothing(tmp_path: Path) -> None:
    control = _job(tmp_path / "ck", "orders", "orders")
    FleetIndex(str(tmp_path / "index")).record_active("orders", control.url, "run-1")
    unset = _other_host(tmp_path, "status", "orders")
    assert unset.returncode == 2, unset
    assert "no [async_stream] fleet_indexes or checkpoint_folders are set to look in" in unset.stderr
    found = _other_host(tmp_path, "status", "--json", "orders", fleet_indexes=str(tmp_path / "index"))
    assert found.returncode == 0, found.stderr
    assert json.loads(found.stdout)["control_area"] == control.url
    for command in (["inspect", "--no-fail", "orders"], ["doctor", "orders"], ["report", "orders"]):
        done = _other_host(tmp_path, *command, fleet_indexes=f" ,{tmp_path / 'index'}")
        assert done.returncode == 0 and "no job named" not in done.stderr, (command, done)


def test_a_name_resolves_through_a_checkpoint_folder_by_folder_or_deployed_name(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    _job(folder, "clicks", "clicks")
    renamed = _job(folder, "views-v2", "views")  # its spec's name is not its checkpoint folder's
    for name, control_area in (("clicks", f"{folder / 'clicks'}.async-stream"), ("views", renamed.url)):
        found = _other_host(tmp_path, "status", "--json", name, checkpoint_folders=str(folder))
        assert found.returncode == 0, found.stderr
        assert json.loads(found.stdout)["control_area"] == control_area
    missing = _other_host(tmp_path, "status", "orders", checkpoint_folders=str(folder))
    assert missing.returncode == 2
    assert f"no job named 'orders': not in this host's registry {tmp_path / 'empty-home' / 'jobs'}" in missing.stderr
    assert f"nor in the [async_stream] sources {folder}; give the job's checkpoint or spec file" in missing.stderr


def test_two_jobs_of_one_name_are_an_error_naming_both_never_the_first(tmp_path: Path) -> None:
    first = _job(tmp_path / "a", "clicks", "clicks")
    _job(tmp_path / "b", "clicks", "clicks")
    FleetIndex(str(tmp_path / "index")).record_active("clicks", first.url, "run-1")
    both = _other_host(
        tmp_path, "stop", "clicks", fleet_indexes=str(tmp_path / "index"), checkpoint_folders=str(tmp_path / "b")
    )
    assert both.returncode == 2, both
    assert "2 jobs are named 'clicks' in the [async_stream] sources: give one's checkpoint instead: " in both.stderr
    assert str(tmp_path / "a" / "clicks") in both.stderr and str(tmp_path / "b" / "clicks") in both.stderr
    assert first.read_json(ControlArea.STOP_REQUEST) is None, "a stop was asked of one of them"


def test_this_hosts_registry_answers_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    mine = _job(tmp_path / "a", "clicks", "clicks")
    indexed = _job(tmp_path / "b", "clicks", "clicks")
    FleetIndex(str(tmp_path / "index")).record_active("clicks", indexed.url, "run-1")
    with monkeypatch.context() as scoped:  # the session's own registry variable is back afterwards
        scoped.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "empty-home"))
        registry.record("clicks", str(tmp_path / "a" / "clicks"), mine.url, "d1")
    found = _other_host(tmp_path, "status", "--json", "clicks", fleet_indexes=str(tmp_path / "index"))
    assert json.loads(found.stdout)["control_area"] == mine.url


def test_an_unreadable_source_is_named(tmp_path: Path) -> None:
    (tmp_path / "index" / "jobs").mkdir(parents=True)
    (tmp_path / "index" / "jobs" / "orders.json").write_text("{not json")
    broken = _other_host(tmp_path, "status", "orders", fleet_indexes=str(tmp_path / "index"))
    assert broken.returncode == 2
    assert f"fleet index {tmp_path / 'index'}: the fleet index cannot be read: " in broken.stderr


def test_list_shows_the_jobs_of_the_settings_on_every_host(tmp_path: Path) -> None:
    _job(tmp_path / "checkpoints", "clicks", "clicks")
    indexed = _job(tmp_path / "ck", "orders", "orders")
    FleetIndex(str(tmp_path / "index")).record_active("orders", indexed.url, "run-1")
    settings = {"fleet_indexes": str(tmp_path / "index"), "checkpoint_folders": str(tmp_path / "checkpoints")}
    listed = _other_host(tmp_path, "list", "--json", **settings)
    assert listed.returncode == 0, listed.stderr
    assert {(row["name"], row["source"]) for row in json.loads(listed.stdout)} == {
        ("clicks", f"checkpoint folder {tmp_path / 'checkpoints'}"),
        ("orders", f"fleet index {tmp_path / 'index'}"),
    }
    assert _other_host(tmp_path, "list", "--no-settings", **settings).stdout == "no jobs found\n"
