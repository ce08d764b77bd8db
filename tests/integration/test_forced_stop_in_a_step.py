"""A forced stop wins even in the middle of a step: each window made deterministic by a point the test
controls, never by a sleep that hopes to land in it.

1. A redeploy paused between stopping the old driver and launching the new one (the old driver is a fake
   that lingers after its final status until the test lets it exit): `stop --force` there, then the step goes
   on and fails with the revocation, launching nothing.
2. A launch that outruns the stop: the hold is revoked right after the fence's last check, as spark-submit
   starts; the real driver reads its stale token and stops before its first micro-batch.
3. A stop while the new driver is launching and has not reported: the stop names it (not "was not running"),
   and it stops before its first micro-batch.
4. A switch request racing a forced stop: asked under a token the stop made stale, the driver refuses
   it (nothing stopped, outcome ``revoked``); and a switch that reaches its write after the stop writes
   nothing.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.exceptions import HoldRevokedError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token
from airflow_async_stream.state.hold import Holder, revoke, take
from airflow_async_stream.state.records import State, now
from airflow_async_stream.state.requests import SwitchRequest
from tests.fake_driver import command as fake_driver
from tests.helpers import rate_noop, until
from tests.integration.helpers import DriverWatch
from tests.integration.migration_job import live_drivers

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
MIGRATION = Holder("DAG run safe_disable/run-1", "safe-disable")


def _spec(checkpoint: str, **changes: Any) -> Any:
    return parse_spec(
        rate_noop(
            "fenced-job",
            checkpoint,
            rows=50,
            **{
                "trigger": {"processing_time": "200 milliseconds"},
                "async_progress": {"enabled": True, "checkpoint_interval_ms": 0},
                **changes,
            },
        )
    )


def _stop_force(target: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, "stop", target, "--force", "--kill-after", "60"], capture_output=True, text=True)


class _InThread:
    """Run ``deploy_job`` (or any call) in a thread and keep what it returned or raised."""

    def __init__(self, call: Callable[[], Any]) -> None:
        self.result: Any = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[], Any]) -> None:
        try:
            self.result = call()
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            self.error = exc

    def join(self, timeout_s: float = 240.0) -> None:
        self._thread.join(timeout_s)
        assert not self._thread.is_alive(), "the step never ended"


@pytest.fixture
def lingering_driver(checkpoint_dir: str, tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], Path]]:
    """A live driver of this host (a fake, recorded as deployed) that obeys a stop and then lingers until the
    test creates the returned file, as a JVM that takes its time to exit."""
    control = ControlArea.for_checkpoint(checkpoint_dir)
    control.ensure()
    release = tmp_path / "exit-now"
    argv = fake_driver(
        control.url, f"old-{uuid.uuid4().hex[:6]}", "--obey", "--record-deployment", "--linger-until", str(release)
    )
    process = subprocess.Popen(argv, cwd=ROOT, start_new_session=True)
    until(lambda: (control.read_json(ControlArea.STATUS) or {}).get("state") == "running", 60, what="the old driver")
    yield process, release
    release.touch()
    process.wait(30)


def test_a_forced_stop_while_a_redeploy_stops_the_old_driver_wins(
    checkpoint_dir: str, lingering_driver: tuple[subprocess.Popen[bytes], Path]
) -> None:
    old, release = lingering_driver
    control = ControlArea.for_checkpoint(checkpoint_dir)
    old_deployment = control.read_deployment().deployment_id
    take(control, MIGRATION, 600)  # the migration holds the job, as its hold task does

    with DriverWatch(checkpoint_dir) as watch:
        step = _InThread(
            lambda: deploy_job(
                _spec(checkpoint_dir), MIGRATION, DeploySettings(launcher=LocalLauncher(), redeploy=True)
            )
        )
        # The window: the old driver said "stopped", and the step waits for its process to exit.
        until(lambda: control.read_status().state == State.STOPPED, 60, what="the old driver's final status")
        assert old.poll() is None and step.error is None and step.result is None
        forced = _stop_force(checkpoint_dir)
        release.touch()  # the old driver exits; the step goes on
        step.join()

    assert forced.returncode == 0, forced
    assert f"ended the hold of {MIGRATION.name}" in forced.stdout
    assert isinstance(step.error, HoldRevokedError), step.error
    assert f"{MIGRATION.name} may no longer change" in str(step.error) and "stop --force" in str(step.error)
    # Nothing launched, nothing of the step written: the job is as the stop left it.
    assert watch.groups_seen - {old.pid} == set(), "a driver was launched after the forced stop"  # old: the fake
    assert control.read_deployment().deployment_id == old_deployment
    assert control.read_status().state == State.STOPPED


def _launch_then(hook_call: Callable[..., Any], before: Callable[[], None], after: Callable[[], None]) -> Any:
    def launch(self: LocalLauncher, *args: Any, **kwargs: Any) -> Any:
        before()
        launched = hook_call(self, *args, **kwargs)
        after()
        return launched

    return launch


def _assert_stopped_before_its_first_batch(control: ControlArea, checkpoint: str, deployment_id: str) -> None:
    status = until(
        lambda: (s := control.read_status()) and s.deployment_id == deployment_id and s.state in ("stopped",) and s,
        60,
        what="the launched driver's final status",
    )
    assert "before its query started" in (status.stop_reason or ""), status
    assert status.batches == 0 and status.query_run_id is None and control.read_progress(deployment_id) == []
    assert batch_ids(checkpoint, "commits") == []
    until(lambda: live_drivers(control) == [], 60, what="the driver process's exit")


def test_a_launch_that_outruns_the_revocation_is_stopped_by_the_driver_itself(
    checkpoint_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    control = ControlArea.for_checkpoint(checkpoint_dir)
    stopper = Holder("process 1 on elsewhere", "stop --force from the command line")
    real_launch = LocalLauncher.launch
    # Past the fence's last check, spark-submit starts: the revocation lands right then.
    monkeypatch.setattr(
        LocalLauncher,
        "launch",
        _launch_then(real_launch, lambda: revoke(control, stopper, "stop --force"), lambda: None),
    )

    with pytest.raises(HoldRevokedError, match="ended by process 1 on elsewhere"):
        deploy_job(_spec(checkpoint_dir), MIGRATION, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))

    record = control.read_deployment()
    _assert_stopped_before_its_first_batch(control, checkpoint_dir, record.deployment_id)
    assert f"token {record.hold_token}" in control.read_status().stop_reason


def test_a_stop_reaches_a_driver_that_is_still_launching(checkpoint_dir: str, monkeypatch: pytest.MonkeyPatch) -> None:
    control = ControlArea.for_checkpoint(checkpoint_dir)
    stops: list[_InThread] = []

    def stop_meanwhile() -> None:
        # Past the fence's last check, before spark-submit starts: the new deployment is recorded and no
        # status names it. The user's stop comes now; it must address that deployment.
        deployment_id = control.read_deployment().deployment_id
        stops.append(_InThread(lambda: _stop_force(checkpoint_dir)))
        until(
            lambda: (control.read_json(ControlArea.STOP_REQUEST) or {}).get("deployment_id") == deployment_id,
            60,
            what="the stop request naming the launching deployment",
        )

    monkeypatch.setattr(
        LocalLauncher,
        "launch",
        _launch_then(LocalLauncher.launch, stop_meanwhile, lambda: None),
    )

    with pytest.raises(HoldRevokedError):
        deploy_job(_spec(checkpoint_dir), MIGRATION, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    stops[0].join()
    forced = stops[0].result

    assert forced.returncode == 0, forced
    assert "was not running" not in forced.stdout and "stopped: state stopped" in forced.stdout, forced.stdout
    _assert_stopped_before_its_first_batch(control, checkpoint_dir, control.read_deployment().deployment_id)


def test_a_switch_request_racing_a_forced_stop_is_never_applied(
    checkpoint_dir: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_async_stream.switch import request as switch_module
    from airflow_async_stream.switch.request import switch_in_place

    control = ControlArea.for_checkpoint(checkpoint_dir)
    spec = _spec(checkpoint_dir)
    deployed = deploy_job(spec, MIGRATION, DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180))
    stopper = Holder("process 2 on elsewhere", "stop --force from the command line")
    slower = _spec(checkpoint_dir, trigger={"processing_time": "400 milliseconds"})

    # (a) The request was written under the hold; the forced stop lands before the driver applies it.
    grant = take(control, MIGRATION, 600)
    revoke(control, stopper, "stop --force")
    request = SwitchRequest(
        request_id="r-stale",
        deployment_id=deployed.deployment_id,
        spec=slower.to_mapping(),
        requested_at=now(),
        hold_token=grant.token,
    )
    control.write_switch_request(request)
    account = until(
        lambda: (r := control.read_switch_account()) and r.request_id == "r-stale" and r.settled and r,
        60,
        what="the driver's account of the stale request",
    )
    assert account.outcome == "revoked" and "was ended before it was applied" in account.reason, account
    assert account.stopped_at is None, "the query was stopped for a request it must not apply"
    status = control.read_status()
    assert status.state == State.RUNNING and status.switches == 0 and status.query_run_id == deployed.query_run_id

    # (b) A switch whose forced stop lands between its take and its write: it writes no request.
    other = Holder("DAG run rollout/run-2", "rollout")
    # Injected after its take (the request is stamped with the hold's token under the hold), before its write.
    monkeypatch.setattr(
        switch_module,
        "replace",
        _then(dataclasses.replace, lambda: revoke(control, stopper, "stop --force")),
    )
    tokens = current_token(control)
    with pytest.raises(HoldRevokedError, match="ended by process 2 on elsewhere"):
        switch_in_place(control, slower, holder=other, timeout_s=30)
    assert control.read_switch_request() is None
    assert current_token(control) == tokens + 2  # its take, then the revocation
    assert control.read_status().query_run_id == deployed.query_run_id


def _then(call: Callable[..., Any], after: Callable[[], None]) -> Callable[..., Any]:
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        value = call(*args, **kwargs)
        after()
        return value

    return wrapped


def test_a_rollout_step_whose_hold_a_forced_stop_ended_records_it_and_rolls_nothing_back(
    checkpoint_dir: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from airflow_async_stream.exceptions import RolloutError
    from airflow_async_stream.rollout.apply import ApplySettings, apply_item
    from airflow_async_stream.rollout.planner import PlanItem

    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'index'}\n")
    control = ControlArea.for_checkpoint(checkpoint_dir)
    spec = _spec(checkpoint_dir)
    item = PlanItem(
        spec.name,
        "deploy",
        "new job",
        checkpoint=checkpoint_dir,
        control_url=control.url,
        desired_spec=spec.to_mapping(),
    )
    rollout = Holder("DAG run rollout/run-3", "rollout", dag_id="rollout", run_id="run-3")
    stopper = Holder("process 3 on elsewhere", "stop --force from the command line")
    monkeypatch.setattr(
        LocalLauncher,
        "launch",
        _launch_then(LocalLauncher.launch, lambda: revoke(control, stopper, "stop --force"), lambda: None),
    )

    with pytest.raises(RolloutError, match="ended by process 3 on elsewhere"):
        apply_item(
            item,
            rollout,
            ApplySettings(
                str(folder), DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180), wait_timeout_s=60
            ),
        )

    recorded = control.read_json(ControlArea.ROLLOUT)
    assert recorded["outcome"] == "failed" and "may no longer change" in recorded["error"], recorded
    assert "rollback" not in recorded["error"]
    _assert_stopped_before_its_first_batch(control, checkpoint_dir, control.read_deployment().deployment_id)
