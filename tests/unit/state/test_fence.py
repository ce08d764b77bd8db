"""Fencing tokens: they only grow, a forced stop makes every earlier grant stale at once, and the checks a
step and a driver make right before they act (no Spark)."""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import HoldRevokedError, JobHeldError
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import KEPT_CLAIMS, Fence, current_token, start_refusal
from airflow_async_stream.state.hold import Holder, held, release, revoke, take
from airflow_async_stream.state.records import Deployment, State, now

RUN_A = Holder("DAG run migrate/run-a", "safe-disable clicks")
RUN_B = Holder("DAG run migrate/run-b", "deploy clicks")
STOPPER = Holder("process 9 on h", "stop from the command line")


@pytest.fixture
def control(tmp_path: Path) -> ControlArea:
    return ControlArea(str(tmp_path / "ck.async-stream"))


def test_every_new_holder_and_every_revocation_bump_the_token_and_renewals_keep_it(control: ControlArea) -> None:
    assert current_token(control) == 0
    a = take(control, RUN_A, 60)
    assert (a.token, a.new) == (1, True)
    assert take(control, RUN_A, 60).token == 1  # a later step of the same run
    revoke(control, STOPPER, "stop --force")
    assert current_token(control) == 2
    b = take(control, RUN_B, 60)
    assert b.token == 3 and control.read_hold().token == 3
    release(control, RUN_B)
    assert current_token(control) == 3  # a release ends a hold, but nobody else acted: no bump
    assert take(control, RUN_A.__class__("DAG run m/c", "x"), 60).token == 4


def test_a_hold_of_an_earlier_release_has_token_0_and_the_next_holder_gets_past_it(control: ControlArea) -> None:
    control.ensure()
    old = {"holder": RUN_A.name, "purpose": "x", "acquired_at": now(), "expires_at": now() + 600}
    control.write_json(ControlArea.HOLD, old)  # no token, no fence.json
    assert control.read_hold().token == 0
    assert take(control, RUN_A, 60).token == 0  # renewed as it was
    revoke(control, STOPPER, "stop --force")
    assert take(control, RUN_B, 60).token == 2


def test_a_stale_grant_fails_its_check_naming_who_ended_the_hold(control: ControlArea) -> None:
    grant = take(control, RUN_A, 600)
    grant.fence.check()  # current: nothing happens
    revoke(control, STOPPER, "stop --force from the command line")
    with pytest.raises(HoldRevokedError, match=r"migrate/run-a may no longer change .* ended by process 9 on h"):
        grant.fence.check()
    with pytest.raises(HoldRevokedError):
        with grant.fence.guarded():
            pytest.fail("the guarded action ran after the revocation")


def test_a_grant_made_stale_by_a_later_holder_names_it(control: ControlArea) -> None:
    grant = take(control, RUN_A, 0.01)  # expires ...
    while control.read_hold().expires_at > now():
        pass
    take(control, RUN_B, 60)  # ... and another holder takes the job
    with pytest.raises(HoldRevokedError, match="taken by DAG run migrate/run-b"):
        grant.fence.check()


def test_held_yields_the_grant(control: ControlArea) -> None:
    with held(control, RUN_A, 60) as grant:
        assert grant.token == current_token(control) == 1 and grant.new


def test_a_revocation_waits_for_a_guarded_action_on_local_disks(control: ControlArea) -> None:
    """The check and the action it guards run under the hold's flock: a revocation cannot fall between."""
    grant = take(control, RUN_A, 600)
    inside, go_on, order = threading.Event(), threading.Event(), []

    def step() -> None:
        with grant.fence.guarded():
            inside.set()
            go_on.wait(10)
            order.append("action")

    thread = threading.Thread(target=step)
    thread.start()
    assert inside.wait(10)
    revoker = threading.Thread(target=lambda: (revoke(control, STOPPER, "stop --force"), order.append("revoke")))
    revoker.start()
    revoker.join(0.3)
    assert revoker.is_alive(), "the revocation did not wait for the guard"
    go_on.set()
    thread.join(10)
    revoker.join(10)
    assert order == ["action", "revoke"]


# -- the driver's own check ---------------------------------------------------------------------------


def _deployed(control: ControlArea, deployment_id: str, token: int | None, **changes: object) -> Deployment:
    record = Deployment(deployment_id=deployment_id, job="clicks", deployed_at=now(), hold_token=token, **changes)
    control.ensure()
    control.write_deployment(record)
    return record


def test_a_driver_with_a_current_token_and_no_stop_starts(control: ControlArea) -> None:
    grant = take(control, RUN_A, 600)
    _deployed(control, "d1", grant.token)
    assert start_refusal(control, "d1") is None


def test_a_driver_whose_hold_was_revoked_while_it_launched_stops_before_its_query(control: ControlArea) -> None:
    grant = take(control, RUN_A, 600)
    _deployed(control, "d1", grant.token)
    revoke(control, STOPPER, "stop --force")
    refusal = start_refusal(control, "d1")
    assert refusal is not None and refusal.state == State.STOPPED
    assert "the hold that deployed it (token 1) was ended" in refusal.reason and "process 9 on h" in refusal.reason


def test_a_driver_whose_deployer_died_and_whose_job_another_holder_took_over_starts(control: ControlArea) -> None:
    """A rollout killed right after spark-submit: its re-run takes the job (the dead run's hold ended) and
    finds the driver running; only a forced stop stops a launching driver, not a holder taking over."""
    dead = Holder("DAG run rollout/run-1", "rollout", dag_id="rollout", run_id="run-1")
    grant = take(control, dead, 600)
    _deployed(control, "d1", grant.token)
    take(control, RUN_B, 600, lambda dag_id, run_id: "failed")  # the scheduler failed the dead run
    assert current_token(control) > grant.token
    assert start_refusal(control, "d1") is None
    revoke(control, STOPPER, "stop --force")  # ... but a forced stop of the holder that took over does
    refusal = start_refusal(control, "d1")
    assert refusal is not None and "ended by process 9 on h" in refusal.reason


def test_a_driver_that_once_ran_is_not_held_to_its_token(control: ControlArea) -> None:
    """A cluster manager's new attempt of a deployment confirmed long ago: later holders are not its business."""
    grant = take(control, RUN_A, 600)
    _deployed(control, "d1", grant.token, confirmed_at=now())
    revoke(control, STOPPER, "stop --force")
    assert start_refusal(control, "d1") is None


def test_a_replaced_deployment_is_superseded(control: ControlArea) -> None:
    _deployed(control, "d2", None)
    refusal = start_refusal(control, "d1")
    assert refusal is not None and refusal.state == State.SUPERSEDED and "deployment d2 replaced it" in refusal.reason


def test_a_stop_request_after_the_deploy_stops_it_whoever_it_names(control: ControlArea) -> None:
    record = _deployed(control, "d1", None)
    control.request_stop("d0", "stop from the command line", 60)  # the status still named the previous one
    refusal = start_refusal(control, "d1")
    assert refusal is not None and refusal.state == State.STOPPED and "stop from the command line" in refusal.reason
    # ... but the redeploy's own stop of the previous driver, written before this deployment, does not.
    control.write_json(ControlArea.STOP_REQUEST, {"deployment_id": "d0", "requested_at": record.deployed_at - 5})
    assert start_refusal(control, "d1") is None


def test_an_unreadable_fence_is_an_error_not_token_0(control: ControlArea) -> None:
    control.ensure()
    Path(control.path(ControlArea.FENCE)).write_text(json.dumps({"token": "many"}))
    with pytest.raises(Exception, match="fence.json holds no number"):
        Fence(control, RUN_A.name, 0).check()


# -- object stores: tokens claimed with a conditional create ---------------------------------------------
# fsspec's memory:// stands in for an object store here: it has no flock, and its pipe_file(mode="create")
# refuses an existing file as s3fs (If-None-Match: *) and gcsfs (generation 0) do, though by an exists check,
# not atomically: these tests show the protocol, not a store's atomicity.


@pytest.fixture
def remote() -> ControlArea:
    area = ControlArea(f"memory://fence-test-{uuid.uuid4().hex[:8]}/ck.async-stream")
    assert not area.is_local
    return area


def test_on_an_object_store_each_token_is_a_claimed_file(remote: ControlArea) -> None:
    grant = take(remote, RUN_A, 600)
    revoke(remote, STOPPER, "stop --force")
    assert (grant.token, current_token(remote)) == (1, 2)
    assert sorted(remote.fs.ls(remote.path("fence"), detail=False)) == [remote.path("fence/1"), remote.path("fence/2")]
    with pytest.raises(HoldRevokedError, match="ended by process 9 on h"):
        grant.fence.check()


def test_of_two_holders_that_read_the_same_state_on_an_object_store_only_one_gets_a_token(
    remote: ControlArea, monkeypatch: pytest.MonkeyPatch
) -> None:
    """B reads "nobody holds it", then A takes the job before B writes: B's claim of the same token fails."""
    read_hold = ControlArea.read_hold
    raced: list[bool] = []

    def a_takes_right_after_b_reads(self: ControlArea) -> Any:
        hold = read_hold(self)
        if not raced:
            raced.append(True)
            take(ControlArea(remote.url), RUN_A, 600)
        return hold

    monkeypatch.setattr(ControlArea, "read_hold", a_takes_right_after_b_reads)
    with pytest.raises(JobHeldError, match="another holder took the job at the same moment"):
        take(remote, RUN_B, 600)
    monkeypatch.undo()
    assert remote.read_hold().holder == RUN_A.name and current_token(remote) == 1


def test_an_object_stores_claims_keep_the_newest(remote: ControlArea) -> None:
    for n in range(KEPT_CLAIMS + 5):
        take(remote, Holder(f"DAG run m/run-{n}", "migrate"), 60)
        revoke(remote, STOPPER, "stop --force")
    claims = sorted(int(p.rsplit("/", 1)[-1]) for p in remote.fs.ls(remote.path("fence"), detail=False))
    assert len(claims) == KEPT_CLAIMS and claims[-1] == current_token(remote) == 2 * (KEPT_CLAIMS + 5)


class _NoConditionalCreate:
    """An fsspec driver without a conditional create: it refuses pipe_file's mode="create" (as pyarrow's
    HDFS wrapper refuses mode "xb"), and otherwise writes to a memory filesystem."""

    def __init__(self, fs: Any) -> None:
        self._fs = fs

    def pipe_file(self, path: str, value: bytes, mode: str = "overwrite") -> None:
        if mode != "overwrite":
            raise ValueError(f"mode {mode!r} not supported")
        self._fs.pipe_file(path, value)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fs, name)


def test_without_a_conditional_create_a_claim_checks_existence_first(remote: ControlArea) -> None:
    from airflow_async_stream.state.fence import bump

    remote.fs = _NoConditionalCreate(remote.fs)  # type: ignore[assignment]
    assert bump(remote, "taken by a", seen=0) == 1
    with pytest.raises(JobHeldError, match="claimed token 1 first"):
        bump(remote, "taken by b", seen=0)
    assert current_token(remote) == 1
