"""The fleet index: removed and moved jobs found from any host, retired jobs listed once more, the fleet file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from airflow_async_stream.exceptions import DesiredStateError
from airflow_async_stream.rollout.desired import load_desired
from airflow_async_stream.rollout.planner import plan_folder
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.fleet import ACTIVE, RETIRED, FleetIndex
from tests.unit.helpers import FLEET_JOB, deployed, fleet_file, write_spec


def _spec(ck: Path, name: str, **changes: Any) -> dict[str, Any]:
    return parse_spec({**FLEET_JOB, "name": name, "checkpoint": str(ck / name), **changes}).to_mapping()


def _actions(folder: Path) -> dict[str, str]:
    return {item.job: item.action for item in plan_folder(folder)}


@pytest.fixture
def host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This host's job registry, in a folder of its own."""
    home = tmp_path / "home"
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(home))
    return home


def _other_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another worker: an empty registry (its own HOME), the same shared storage."""
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path / "other-home"))


def test_removed_and_moved_jobs_are_found_through_the_index_on_any_host(
    tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, ck = tmp_path / "desired", tmp_path / "ck"
    index = fleet_file(folder, tmp_path / "index")
    specs = {name: _spec(ck, name) for name in ("kept", "removed", "moved")}
    for name, spec in specs.items():
        deployed(spec["checkpoint"], spec, folder)
        index.record_active(name, spec["checkpoint"] + ".async-stream", "run-1")
    write_spec(folder, "kept.yaml", specs["kept"])
    write_spec(folder, "moved.yaml", {**specs["moved"], "checkpoint": str(ck / "moved-elsewhere")})
    here = {item.job: (item.action, item.control_url) for item in plan_folder(folder)}

    _other_host(tmp_path, monkeypatch)
    there = {item.job: (item.action, item.control_url) for item in plan_folder(folder)}

    assert there == here
    assert {job: action for job, (action, _) in there.items()} == {
        "kept": "unchanged",
        "removed": "retire",
        "moved": "refuse",
    }
    assert there["moved"][1] == specs["moved"]["checkpoint"] + ".async-stream"  # where it still runs


def test_the_rollouts_plan_adopts_the_folders_jobs_deployed_by_hand(
    tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs of the folder a person deployed (``deploy``) enter the index at the rollout's plan step, so
    every host finds them once their file is removed."""
    folder, ck = tmp_path / "desired", tmp_path / "ck"
    index = fleet_file(folder, tmp_path / "index")
    specs = {name: _spec(ck, name) for name in ("kept", "removed")}
    for name, spec in specs.items():
        deployed(spec["checkpoint"], spec, folder)
        write_spec(folder, f"{name}.yaml", spec)

    read_only = plan_folder(folder)
    assert index.names() == []  # `plan` on its own writes nothing
    adopted = plan_folder(folder, adopt=True, run_id="run-9")
    assert [i.to_json() for i in adopted] == [i.to_json() for i in read_only]
    assert index.names() == ["kept", "removed"]
    entry = index.lookup("removed")
    assert entry is not None and entry.state == ACTIVE and entry.run_id == "run-9"
    assert entry.checkpoint == specs["removed"]["checkpoint"]

    (folder / "removed.yaml").unlink()
    _other_host(tmp_path, monkeypatch)
    assert _actions(folder) == {"kept": "unchanged", "removed": "retire"}


def _retired(tmp_path: Path, live: bool) -> tuple[Path, FleetIndex, dict[str, Any]]:
    """A folder whose rollout retired job ``old`` (its driver ``live`` again or not): folder, index, spec."""
    folder = tmp_path / "desired"
    index = fleet_file(folder, tmp_path / "index")
    spec = _spec(tmp_path / "ck", "old")
    deployed(spec["checkpoint"], spec, folder, live=live)
    index.record_retired("old", spec["checkpoint"] + ".async-stream", "scheduled__1")
    return folder, index, spec


def test_a_retired_job_is_listed_once_more_then_leaves_the_plan(tmp_path: Path, host: Path) -> None:
    folder, index, spec = _retired(tmp_path, live=False)

    (item,) = plan_folder(folder)
    assert (item.action, item.leaves_plan) == ("unchanged", True)
    assert item.reason == "retired by rollout run scheduled__1: listed once more, then left out of plans"

    index.forget("old")  # what the rollout's apply step does with that item
    assert plan_folder(folder) == []
    gone = json.loads((tmp_path / "index" / "gone" / "old.json").read_text())
    assert gone["state"] == RETIRED and gone["checkpoint"] == spec["checkpoint"]  # kept, not deleted


def test_a_retired_job_someone_started_again_is_retired_again(tmp_path: Path, host: Path) -> None:
    folder, _, _ = _retired(tmp_path, live=True)
    assert _actions(folder) == {"old": "retire"}


def test_the_fleet_file_is_not_a_job_and_may_name_variables(
    tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "desired"
    folder.mkdir()
    monkeypatch.setenv("ASYNC_STREAM_FLEET_ROOT", str(tmp_path / "shared"))
    (folder / "_fleet.yaml").write_text("index: ${ASYNC_STREAM_FLEET_ROOT}/index\n")
    write_spec(folder, "a.yaml", _spec(tmp_path / "ck", "a"))
    assert list(load_desired(folder)) == ["a"]
    assert FleetIndex.for_folder(folder).url == f"{tmp_path}/shared/index"


@pytest.mark.parametrize(
    ("text", "field", "needle"),
    [
        (None, "(file)", "missing: a rollout keeps the index"),
        ("index: fleet-index\n", "index", "is relative"),
        ("index: /shared/index\nextra: 1\n", "extra", "unknown key"),
        ("{}\n", "index", "required"),
        ("index: ${ASYNC_STREAM_NOT_SET_HERE}/index\n", "index", "ASYNC_STREAM_NOT_SET_HERE, which is not set"),
        ("- index\n", "(file)", "must be a mapping"),
    ],
)
def test_a_bad_fleet_file_is_an_error_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str | None, field: str, needle: str
) -> None:
    monkeypatch.delenv("ASYNC_STREAM_NOT_SET_HERE", raising=False)
    folder = tmp_path / "desired"
    folder.mkdir()
    if text is not None:
        (folder / "_fleet.yaml").write_text(text)
    with pytest.raises(DesiredStateError) as caught:
        FleetIndex.for_folder(folder)
    ((file, got_field, reason),) = caught.value.problems
    assert (file, got_field) == ("_fleet.yaml", field) and needle in reason


def test_an_unreadable_index_entry_is_an_error_not_a_missing_job(tmp_path: Path) -> None:
    index = FleetIndex(str(tmp_path / "index"))
    (tmp_path / "index" / "jobs").mkdir(parents=True)
    (tmp_path / "index" / "jobs" / "x.json").write_text("{half")
    with pytest.raises(Exception, match="x.json is not valid JSON"):
        index.lookup("x")


def test_index_entries_are_written_once_and_read_back(tmp_path: Path) -> None:
    index = FleetIndex(str(tmp_path / "index"))
    index.record_active("a", "/ck/a.async-stream/", "r1")
    before = (tmp_path / "index" / "jobs" / "a.json").stat().st_mtime_ns
    index.record_active("a", "/ck/a.async-stream", "r2")  # the same: not rewritten
    assert (tmp_path / "index" / "jobs" / "a.json").stat().st_mtime_ns == before
    assert yaml.safe_load((tmp_path / "index" / "jobs" / "a.json").read_text())["run_id"] == "r1"
    index.record_active("a", "/ck2/a.async-stream", "r3")
    entry = index.lookup("a")
    assert entry is not None and entry.checkpoint == "/ck2/a" and entry.run_id == "r3"
    assert [p.name for p in (tmp_path / "index" / "jobs").iterdir()] == ["a.json"]  # no temporary file left


def test_applying_the_plan_keeps_the_index(tmp_path: Path, host: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No Spark: a refused move keeps the job in the index where it still runs (found then from any host),
    and a job listed once more after its retirement leaves the index."""
    from airflow_async_stream.driver.deploy import DeploySettings
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.rollout.apply import ApplySettings, apply_item
    from airflow_async_stream.state.hold import Holder

    folder, ck = tmp_path / "desired", tmp_path / "ck"
    index = fleet_file(folder, tmp_path / "index")
    moved, old = _spec(ck, "moved"), _spec(ck, "old")
    deployed(moved["checkpoint"], moved, folder)
    index.record_active("moved", moved["checkpoint"] + ".async-stream", "run-1")
    deployed(old["checkpoint"], old, folder, live=False)
    index.record_retired("old", old["checkpoint"] + ".async-stream", "run-1")
    write_spec(folder, "moved.yaml", {**moved, "checkpoint": str(ck / "moved-elsewhere")})
    items = {item.job: item for item in plan_folder(folder)}
    assert (items["moved"].action, items["old"].action) == ("refuse", "unchanged")

    settings = ApplySettings(str(folder), DeploySettings(launcher=LocalLauncher()))
    holder = Holder("DAG run rollout/run-2", "rollout", dag_id="rollout", run_id="run-2")
    assert apply_item(items["moved"], holder, settings)["outcome"] == "refused"
    assert apply_item(items["old"], holder, settings)["outcome"] == "unchanged"

    entry = index.lookup("moved")
    assert entry is not None and entry.checkpoint == moved["checkpoint"] and entry.run_id == "run-1"
    assert index.lookup("old") is None and index.names(index.GONE) == ["old"]
    _other_host(tmp_path, monkeypatch)
    assert _actions(folder) == {"moved": "refuse"}


def test_the_index_works_on_any_fsspec_storage() -> None:
    """An object store's URL (here fsspec's in-memory one): the same entries, listing, retirement and move."""
    index = FleetIndex("memory://fleet-index-test")
    index.record_active("a", "memory://ck/a.async-stream", "r1")
    index.record_active("b", "memory://ck/b.async-stream", "r1")
    index.record_retired("b", "memory://ck/b.async-stream", "r2")
    assert index.names() == ["a", "b"]
    entry = index.lookup("b")
    assert entry is not None and entry.state == RETIRED and entry.checkpoint == "memory://ck/b"
    index.forget("b")
    assert index.names() == ["a"] and index.names(index.GONE) == ["b"]


@pytest.mark.parametrize("store", ["local", "memory"])
def test_a_watchers_look_at_the_index_reads_only_entries_rewritten_since(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, store: str
) -> None:
    import uuid

    url = str(tmp_path / "index") if store == "local" else f"memory://index-{uuid.uuid4().hex[:8]}"
    index = FleetIndex(url)
    for job in ("a", "b", "c"):
        index.record_active(job, f"/ck/{job}.async-stream", "run-1")
    looked: list[str] = []
    lookup = FleetIndex.lookup
    monkeypatch.setattr(FleetIndex, "lookup", lambda self, job: looked.append(job) or lookup(self, job))
    remembered: dict[str, Any] = {}
    assert [job for job, _ in index.entries(remembered)] == ["a", "b", "c"] and looked == ["a", "b", "c"]
    looked.clear()
    assert [entry.control_area for _, entry in index.entries(remembered)] == [f"/ck/{j}.async-stream" for j in "abc"]
    assert looked == []  # nothing rewritten: nothing read
    index.record_active("b", "/moved/b.async-stream", "run-2")
    index.forget("c")
    looked.clear()
    found = dict(index.entries(remembered))
    assert looked == ["b"] and found["b"].control_area == "/moved/b.async-stream" and set(found) == {"a", "b"}
    assert set(remembered) == {"a", "b"}
