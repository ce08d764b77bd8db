"""The streaming-jobs app: built only where it is read, every route behind the auth manager, the settings read
at each request, a name that is not there or not unique answered as such. (The real api-server, tokens and a
browser: tests/integration/test_jobs_page.py.)"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi import HTTPException

from airflow_async_stream.plugin import PREFIX, AsyncStreamPlugin
from airflow_async_stream.plugin.app import list_jobs, one_job, sources
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import read_incidents
from tests.helpers import make_checkpoint


def test_loading_the_plugin_imports_neither_fastapi_nor_airflows_security_module() -> None:
    """Every Airflow process loads plugins; only the api-server reads ``fastapi_apps``."""
    code = (
        "import sys; from airflow_async_stream.plugin import AsyncStreamPlugin; "
        "print(sorted(m for m in sys.modules if m.startswith(('fastapi', 'airflow.api_fastapi'))))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_every_route_of_the_mounted_app_requires_the_jobs_view() -> None:
    (mounted,) = AsyncStreamPlugin.fastapi_apps
    assert mounted["url_prefix"] == PREFIX == AsyncStreamPlugin.external_views[0]["href"].rstrip("/")
    app = mounted["app"]
    assert AsyncStreamPlugin.fastapi_apps[0]["app"] is app  # built once
    from fastapi.routing import APIRoute

    assert all(isinstance(route, APIRoute) for route in app.routes)  # no docs or schema page beside the guard
    assert {route.path for route in app.routes} == {"/", "/jobs/{name}", "/api/jobs", "/api/jobs/{name}"}
    (guard,) = app.router.dependencies
    assert guard.dependency.__qualname__.startswith("requires_access_view")


def _job(folder: Path, name: str) -> None:
    ControlArea.for_checkpoint(make_checkpoint(folder / name, [0], [0])).ensure()


def test_the_settings_are_read_at_each_request(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _job(tmp_path / "a", "clicks")
    _job(tmp_path / "b", "views")
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", f"{tmp_path / 'a'}")
    assert [r["name"] for r in list_jobs()["jobs"]] == ["clicks"]
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", f"{tmp_path / 'a'}, {tmp_path / 'b'}")
    assert [r["name"] for r in list_jobs()["jobs"]] == ["clicks", "views"]
    assert sources() == {"fleet_indexes": [], "checkpoint_folders": [str(tmp_path / "a"), str(tmp_path / "b")]}


def test_a_name_not_found_is_404_and_a_shared_name_409_until_a_checkpoint_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _job(tmp_path / "a", "clicks")
    _job(tmp_path / "b", "clicks")
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", f"{tmp_path / 'a'},{tmp_path / 'b'}")
    with pytest.raises(HTTPException) as missing:
        one_job("views")
    assert missing.value.status_code == 404 and str(tmp_path / "a") in missing.value.detail
    with pytest.raises(HTTPException) as shared:
        one_job("clicks")
    assert shared.value.status_code == 409 and str(tmp_path / "b" / "clicks") in shared.value.detail
    detail = one_job("clicks", checkpoint=str(tmp_path / "b" / "clicks"))
    assert detail["checkpoint"] == str(tmp_path / "b" / "clicks") and detail["series"] == []


def test_the_pages_and_the_plugin_entry_point_are_in_the_package() -> None:
    """A wheel carries only the data files pyproject.toml names, and Airflow finds the plugin by its entry point."""
    import fnmatch
    import json
    import re
    from importlib.metadata import entry_points

    import airflow_async_stream.plugin as plugin

    pyproject = (Path(__file__).resolve().parents[3] / "pyproject.toml").read_text()
    (listed,) = re.findall(r'^"airflow_async_stream\.plugin" = (\[.*\])$', pyproject, re.MULTILINE)
    patterns = json.loads(listed)
    assets = [p.name for p in Path(plugin.__file__).parent.iterdir() if p.is_file() and p.suffix != ".py"]
    assert assets and all(any(fnmatch.fnmatch(a, pattern) for pattern in patterns) for a in assets), assets
    (found,) = [ep for ep in entry_points(group="airflow.plugins") if ep.value.startswith("airflow_async_stream")]
    assert found.load() is AsyncStreamPlugin


def test_a_job_named_by_its_spec_not_its_folder_is_found_and_the_checkpoint_narrows_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import json

    from airflow_async_stream.plugin import app

    checkpoint = make_checkpoint(tmp_path / "cks" / "ck-2026", [0], [0])
    control = ControlArea.for_checkpoint(checkpoint)
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps({"name": "orders"}).encode())
    for other in range(3):
        _job(tmp_path / "cks", f"other-{other}")
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", str(tmp_path / "cks"))
    assert one_job("orders")["checkpoint"] == checkpoint  # by the spec's name
    rows_read: list[str] = []
    monkeypatch.setattr(app, "job_row", lambda job: rows_read.append(job.name) or {"name": "orders"})
    monkeypatch.setattr(app, "job_detail", lambda job: {"checkpoint": job.checkpoint})
    assert one_job("orders", checkpoint=checkpoint) == {"checkpoint": checkpoint}
    assert rows_read == ["ck-2026"]  # the link's ?checkpoint= spared reading the other jobs


def test_every_answer_carries_the_security_headers_and_a_page_only_its_own_script() -> None:
    """Through the mounted app with its auth guard in place: the guard's own 401 carries them too."""
    from fastapi.testclient import TestClient

    from airflow_async_stream.plugin.app import HEADERS, policy

    client = TestClient(AsyncStreamPlugin.fastapi_apps[0]["app"])
    for path in ("/", "/jobs/clicks", "/api/jobs"):
        answer = client.get(path)
        assert answer.status_code == 401
        assert {k: answer.headers[k] for k in HEADERS} == HEADERS
        assert answer.headers["Content-Security-Policy"] == "default-src 'none'; frame-ancestors 'self'"
    html = (Path(__file__).resolve().parents[3] / "airflow_async_stream" / "plugin" / "jobs.html").read_text()
    said = policy(html)
    assert said.startswith("default-src 'none'; script-src 'sha256-") and "'unsafe-inline'" not in said
    assert said.count("'sha256-") == 2 and "connect-src 'self'" in said and "frame-ancestors 'self'" in said
    assert policy(html.replace("</script>", "alert(1)</script>")) != said  # a changed script no longer runs


def test_a_jobs_answer_stays_small_whatever_its_files_hold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A control area written by hand: incidents with megabyte texts, a progress log switching its configuration
    at every batch. The answer carries the newest of each, cut, never the files."""
    import json

    from airflow_async_stream.insight.overview import CHANGES, INCIDENTS
    from airflow_async_stream.state.incidents import ERROR_CHARS, TEXT_CHARS
    from tests.unit.helpers import batch_events, configuration

    _job(tmp_path, "clicks")
    control = ControlArea.for_checkpoint(str(tmp_path / "clicks"))
    huge = {"kind": "crash", "deployment_id": "d1", "error": "e" * (1 << 20), "cure": "c" * (1 << 20)}
    with open(control.path(ControlArea.INCIDENTS), "w") as fh:
        fh.writelines(json.dumps({**huge, "since": float(i)}) + "\n" for i in range(3))
        fh.writelines(
            json.dumps({"kind": "crash", "deployment_id": "d1", "since": 10.0 + i}) + "\n" for i in range(300)
        )
    events = []
    for i in range(600):  # every batch another configuration: 599 changes
        events += batch_events(
            [200.0], [100.0], first_batch=i, start=1_800_000_000.0 + i, conf=configuration(i % 2 == 0)
        )
    Path(control.path(ControlArea.PROGRESS)).mkdir()
    Path(control.path(ControlArea.PROGRESS), "d1-000001-t1800000000.jsonl").write_text(
        "".join(json.dumps(e) + "\n" for e in events)
    )
    monkeypatch.setenv("AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS", str(tmp_path))

    detail = one_job("clicks")

    assert len(detail["changes"]) == CHANGES and len(detail["incidents"]) == INCIDENTS
    assert len(json.dumps(detail)) < 1 << 20, len(json.dumps(detail))
    oldest_huge = [i for i in read_incidents(control) if (i.error or "").startswith("e")]
    assert oldest_huge and all(
        len(i.error or "") <= ERROR_CHARS and len(i.cure or "") <= TEXT_CHARS for i in oldest_huge
    )
