"""The streaming-jobs pages for real: a job run on the embedded Spark (synchronous, then switched in place to
async at interval 0), a real api-server with the simple auth manager and the plugin, its JSON with and without
a token, and both pages in headless Chromium (Debian's `chromium`), inside Airflow's own UI, with screenshots.

The job reads a folder the test fills with one file per batch (``maxFilesPerTrigger: 1``), so once those are
read it runs on, live and idle, and every figure the page shows stays put while it is checked.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.autotune.tune import TuneSettings, tune_until_settled
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.exceptions import DriverFailedError
from airflow_async_stream.insight.groups import percentile
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.switch.request import switch_in_place
from tests.helpers import rate_noop, until
from tests.integration.airflow_stack import AirflowStack
from tests.integration.helpers import browser, output_folder
from tests.session import CHECKPOINT_ROOT

pytestmark = pytest.mark.integration
BATCHES = 12  # per configuration


def _steady(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The batches the report's percentiles count: each query start's first batch left out."""
    firsts: dict[str, dict[str, Any]] = {}
    for event in events:
        firsts.setdefault(event["query_run_id"], event)
    return [e for e in events if firsts[e["query_run_id"]] is not e] or events


def _ran(control: ControlArea, enabled: bool) -> list[dict[str, Any]]:
    return [
        e
        for e in control.read_progress()
        if "addBatch" in e["duration_ms"] and e["configuration"]["async_progress"]["enabled"] is enabled
    ]


def _feed_and_await(control: ControlArea, incoming: Path, enabled: bool, first: int) -> None:
    for i in range(first, first + BATCHES):
        (incoming / f"{i:05d}.json").write_text(f'{{"v": {i}}}\n')
    until(
        lambda: len(_ran(control, enabled)) >= BATCHES, 120, what=f"{BATCHES} batches with async {enabled}", every_s=0.1
    )


def _failing_job(folder: Path) -> ControlArea:
    """``orders``: its query names a column the source does not have, so its deployment never runs a batch."""
    spec = parse_spec(rate_noop("orders", str(folder / "orders"), transform={"sql": "SELECT nope FROM source"}))
    with pytest.raises(DriverFailedError):
        deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    return ControlArea.for_checkpoint(spec.checkpoint)


def _busy_job(folder: Path) -> ControlArea:
    """``views``: rate -> noop, left running batch after batch: healthy on the page; its async delegated to the
    tuner (interval pinned at 0), which measured it, decided and acted before the page is looked at."""
    spec = parse_spec(
        rate_noop(
            "views",
            str(folder / "views"),
            rows=50,
            trigger={"processing_time": "500 milliseconds"},
            async_progress={"enabled": "auto", "checkpoint_interval_ms": 0},
            autotune={"measure_batches": 5, "at_most_every": "0 seconds"},
        )
    )
    deploy = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)
    deploy_job(spec, Holder.this_process("test"), deploy)
    control = ControlArea.for_checkpoint(spec.checkpoint)
    tune_until_settled(control, Holder.this_process("autotune"), TuneSettings(deploy=deploy), timeout_s=180, poll_s=0.5)
    return control


def _real_job(folder: Path) -> ControlArea:
    """``clicks``: 12 synchronous batches, switched in place to async at interval 0, 12 more; left running."""
    incoming = folder.parent / f"{folder.name}-incoming"
    incoming.mkdir(parents=True)
    source = {"format": "json", "schema": "v INT", "options": {"path": str(incoming), "maxFilesPerTrigger": 1}}
    spec = parse_spec(
        rate_noop("clicks", str(folder / "clicks"), source=source, trigger={"processing_time": "100 milliseconds"})
    )
    control = ControlArea.for_checkpoint(spec.checkpoint)
    (incoming / "00000.json").write_text('{"v": 0}\n')  # the deploy returns at the first batch
    deploy_job(spec, Holder.this_process("test"), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    _feed_and_await(control, incoming, False, 1)
    on = deep_merge(spec.to_mapping(), {"async_progress": {"enabled": True, "checkpoint_interval_ms": 0}})
    switch_in_place(control, parse_spec(on), timeout_s=120)
    _feed_and_await(control, incoming, True, 100)
    return control


@pytest.fixture
def stack(tmp_path: Path) -> Iterator[tuple[AirflowStack, Path, ControlArea]]:
    folder = CHECKPOINT_ROOT / f"page-{uuid.uuid4().hex[:8]}"
    control = _real_job(folder)
    _failing_job(folder)
    _busy_job(folder)
    others = tmp_path / "more-checkpoints"  # not under CHECKPOINT_ROOT, whose clean-up reads every control area
    broken = ControlArea.for_checkpoint(str(others / "broken"))
    broken.ensure()
    Path(broken.path(ControlArea.STATUS)).write_text('{"state": "runn')  # torn by a full disk, say
    passwords = tmp_path / "passwords.json"
    passwords.write_text(json.dumps({"alice": "alice-pw"}))
    stack = AirflowStack(
        tmp_path / "airflow",
        core__simple_auth_manager_all_admins="False",
        core__simple_auth_manager_users="alice:viewer",
        core__simple_auth_manager_passwords_file=str(passwords),
        async_stream__checkpoint_folders=f"{folder},{others}",
    )
    try:
        stack.airflow("db", "migrate", timeout=300)
        stack.start("api-server", "api-server")
        stack.await_(lambda: _status(stack, "/api/v2/monitor/health") == 200, "the api-server", 120)
        yield stack, folder, control
    finally:
        stack.close()


def _request(stack: AirflowStack, path: str, token: str | None = None, data: bytes | None = None) -> tuple[int, bytes]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    if data is not None:
        headers["Content-Type"] = "application/json"
    url = f"http://127.0.0.1:{stack.env['AIRFLOW__API__PORT']}{path}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, headers), timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()
    except OSError:
        return 0, b""


def _status(stack: AirflowStack, path: str) -> int:
    return _request(stack, path)[0]


def _token(stack: AirflowStack) -> str:
    code, body = _request(stack, "/auth/token", data=json.dumps({"username": "alice", "password": "alice-pw"}).encode())
    assert code == 201, body
    return json.loads(body)["access_token"]


def test_the_pages_show_a_real_job_to_a_logged_in_user_only(stack: tuple[AirflowStack, Path, ControlArea]) -> None:
    airflow, folder, control = stack
    plugins = json.loads(airflow.airflow("plugins", "-o", "json"))
    (ours,) = [p for p in plugins if p["name"] == "async_stream"]
    assert ours["fastapi_apps"][0]["url_prefix"] == "/async-stream" and ours["external_views"][0]["url_route"]
    assert "Failed to import plugin" not in airflow.log("api-server")

    for path in ("/async-stream/docs", "/async-stream/openapi.json"):  # FastAPI's own pages would be unguarded
        assert _status(airflow, path) == 404
    for path in (
        "/async-stream/api/jobs",
        "/async-stream/api/jobs/clicks",
        "/async-stream/",
        "/async-stream/jobs/clicks",
    ):
        code, body = _request(airflow, path)
        assert code == 401 and b"clicks" not in body, (path, code, body)
        code, body = _request(airflow, path, token="not-a-token")
        assert code == 403 and b"clicks" not in body, (path, code, body)

    token = _token(airflow)
    code, body = _request(airflow, "/api/v2/plugins/importErrors", token)
    assert code == 200 and json.loads(body)["import_errors"] == [], body
    code, body = _request(airflow, "/api/v2/plugins", token)  # a plugin Airflow's UI cannot read is skipped
    assert code == 200 and "async_stream" in [p["name"] for p in json.loads(body)["plugins"]], body
    code, body = _request(airflow, "/async-stream/api/jobs", token)
    assert code == 200, body
    rows = {row["name"]: row for row in json.loads(body)["jobs"]}
    assert set(rows) == {"clicks", "broken", "orders", "views"}
    assert rows["views"]["health"]["verdict"] == "healthy" and rows["views"]["restart"]["outlook"] == "safe"
    orders = rows["orders"]
    assert orders["health"]["verdict"] == "failed_to_start" and "nope" in orders["health"]["reason"], orders
    assert orders["incident"]["kind"] == "failed_start" and "validate --analyze" in orders["incident"]["cure"]
    assert orders["incident"]["diagnosis"].startswith("never_started: ")
    assert "status.json" in rows["broken"]["error"] and rows["broken"]["state"] is None
    clicks = rows["clicks"]
    fast = [e["duration_ms"]["triggerExecution"] for e in _steady(_ran(control, True))]
    assert clicks["error"] is None and clicks["state"] == "running" and clicks["live"] is True
    assert clicks["health"]["verdict"] in ("healthy", "idle") and clicks["incident"] is None
    assert clicks["restart"]["outlook"] in ("safe", "needs_migration")  # running async: never UNSAFE
    assert clicks["throughput"]["input_rows_per_s"] is not None
    assert clicks["async"] == {"enabled": True, "checkpoint_interval_ms": 0}
    assert clicks["p50_ms"] == percentile(fast, 50)
    slow = _ran(control, False)
    managed = [e["duration_ms"]["walCommit"] + e["duration_ms"]["commitOffsets"] for e in slow]
    assert clicks["offset_management_share"] == round(
        percentile(managed, 50) / percentile([e["duration_ms"]["triggerExecution"] for e in slow], 50), 3
    )
    assert clicks["last_change"]["kind"] == "switch" and clicks["last_change"]["pause_s"] > 0
    assert clicks["restart"]["reason"]

    code, body = _request(airflow, "/async-stream/api/jobs/clicks", token)
    detail = json.loads(body)
    assert (
        code == 200
        and len(detail["series"]) == 2 * BATCHES + 1
        and [c["kind"] for c in detail["changes"]] == ["switch"]
    )
    assert isinstance(detail["advice"], list) and detail["report"]["batches"] == 2 * BATCHES + 1
    code, body = _request(airflow, "/async-stream/api/jobs/orders", token)
    history = json.loads(body)["history"]
    assert code == 200 and [h["kind"] for h in history] == ["failed_start"], history  # its failed deployment

    _browse(airflow, token, clicks)


def _browse(airflow: AirflowStack, token: str, clicks: dict[str, Any]) -> None:
    """Both pages in Chromium, logged in by Airflow's own cookie; the list inside Airflow's UI too."""
    base = f"http://127.0.0.1:{airflow.env['AIRFLOW__API__PORT']}"
    out = output_folder("jobs_page")
    started = time.monotonic()
    with browser() as chromium:
        context = chromium.new_context(viewport={"width": 1400, "height": 900})
        context.add_cookies([{"name": "_token", "value": token, "url": base}])
        page = context.new_page()
        console: list[str] = []
        page.on("console", lambda message: console.append(message.text))  # a script or style the policy blocks
        answer = page.goto(f"{base}/async-stream/")
        assert answer is not None and answer.headers["x-frame-options"] == "SAMEORIGIN"
        assert answer.headers["content-security-policy"].startswith("default-src 'none'; script-src 'sha256-")
        row = page.locator("tr[data-job=clicks]")
        row.wait_for(timeout=30_000)
        cells = row.locator("td").all_inner_texts()
        assert cells[0].startswith("clicks") and cells[1] in ("healthy", "idle") and cells[2].startswith("running")
        assert cells[3] == "on, 0 ms" and cells[7] == str(round(clicks["p50_ms"]))
        assert cells[4] != "UNSAFE"
        assert page.locator("tr[data-job=views] td").nth(1).inner_text() == "healthy"
        failing = page.locator("tr[data-job=orders]")
        said = failing.locator("td").nth(1).inner_text()
        assert said.startswith("failed to start") and "nope" in said, said
        assert "doctor: never_started" in failing.get_attribute(
            "title"
        ) and "validate --analyze" in failing.get_attribute("title")  # type: ignore[operator]
        assert page.locator("tr.error[data-job=broken]").inner_text().count("status.json") == 1
        page.fill("#filter", "broken")
        assert page.locator("tbody tr").count() == 1
        page.fill("#filter", "failed to start")
        assert (
            page.locator("tbody tr").all_inner_texts()[0].startswith("orders") and page.locator("tbody tr").count() == 1
        )
        page.fill("#filter", "UNRESOLVED_COLUMN")  # the reason is searched too
        assert page.locator("tbody tr[data-job=orders]").count() == 1
        page.fill("#filter", "no-such-job")
        assert page.locator("#no-match").inner_text().startswith("No job matches")
        page.fill("#filter", "")
        page.click("th[data-key=p50_ms]")
        page.screenshot(path=str(out / "jobs.png"), full_page=True)

        page.click("tr[data-job=clicks] a")
        page.locator("#chart polyline.latency").first.wait_for(timeout=30_000)
        assert page.locator("#chart line.change").count() == 1
        assert page.locator("#chart polyline.latency").count() == 2  # no line across the switch's pause
        assert "sync restart" in page.locator("dl").inner_text().lower()
        changed = page.locator("ol.history li").all_inner_texts()
        assert [t for t in changed if "switch: batch" in t and "sync, trigger 100 milliseconds -> async 0 ms" in t], (
            changed
        )
        page.screenshot(path=str(out / "job.png"), full_page=True)

        page.goto(f"{base}/async-stream/")
        page.click("tr[data-job=orders] a")
        page.locator("ol.history li.incident").first.wait_for(timeout=30_000)
        facts = page.locator("dl").inner_text()
        assert "failed to start" in facts and "Diagnosis" in facts and "validate --analyze" in facts, facts
        assert "failed start of" in page.locator("ol.history").inner_text()
        page.screenshot(path=str(out / "job-failed.png"), full_page=True)

        page.goto(f"{base}/async-stream/")
        page.click("tr[data-job=views] a")
        page.locator("ol.history li").first.wait_for(timeout=30_000)
        facts = page.locator("dl").inner_text()
        assert "Autotune" in facts and "switch(es) in all" in facts and "sync p50" in facts, facts
        assert "autotune: try: turn async progress tracking on at 0 ms" in page.locator("ol.history").inner_text()
        page.screenshot(path=str(out / "job-autotune.png"), full_page=True)

        page.goto(f"{base}/plugin/async-stream")  # the page in Airflow's own UI, under its navigation
        frame = page.frame_locator("iframe")
        frame.locator("tr[data-job=clicks]").wait_for(timeout=60_000)
        page.screenshot(path=str(out / "in-airflow.png"))
        page.get_by_role("button", name="Browse").click()  # and it is in Airflow's navigation
        page.get_by_role("menuitem", name="Streaming jobs").wait_for(timeout=30_000)
    assert not [text for text in console if "Content Security Policy" in text], console
    print(f"browser part: {time.monotonic() - started:.1f} s; screenshots in {out}")
