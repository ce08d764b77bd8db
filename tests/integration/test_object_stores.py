"""The control area on real object-store APIs: moto's S3 server through s3fs and Azurite's Blob service through
adlfs, both on 127.0.0.1 (tests/stores.py). Records, the progress log, incidents, requests, the fleet index,
holds and the fence's race between processes, and the checkpoint reader over a checkpoint copied there."""

from __future__ import annotations

import multiprocessing
import uuid
from pathlib import Path
from typing import Any

import fsspec
import pytest

from airflow_async_stream.exceptions import ControlAreaError, JobHeldError
from airflow_async_stream.state import fence
from airflow_async_stream.state.checkpoint import batch_ids, inspect_checkpoint
from airflow_async_stream.state.commits import check_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fleet import FleetIndex
from airflow_async_stream.state.hold import Holder, release, revoke, take
from airflow_async_stream.state.incidents import Incident, Kind, read_incidents, record_incident
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State, Status, now
from airflow_async_stream.state.requests import SwitchRequest
from tests.helpers import make_checkpoint
from tests.stores import copy_tree

RUN_A = Holder("DAG run rollout/a", "rollout step")
RUN_B = Holder("DAG run rollout/b", "deploy")
TRIALS = 20
pytestmark = pytest.mark.integration


def _area(store: Any) -> ControlArea:
    area = ControlArea(store.url(f"ck-{uuid.uuid4().hex[:8]}.async-stream"))
    area.ensure()
    return area


def _other_client(area: ControlArea) -> ControlArea:
    """The same control area through a client of its own, as another process sees it."""
    other = ControlArea(area.url)
    other.fs = type(area.fs)(skip_instance_cache=True)
    return other


def test_records_round_trip_and_a_missing_one_reads_as_none(store: Any) -> None:
    control = _area(store)
    assert control.read_status() is None and control.read_deployment() is None
    status = Status(
        job="j", deployment_id="d1", state=State.RUNNING, host="h", pid=1, started_at=now(), heartbeat_at=now()
    )
    control.write_status(status)
    assert control.read_status() == status
    assert liveness(control.read_status()).live
    control.write_switch_request(
        SwitchRequest(deployment_id="d1", request_id="r1", spec={"name": "j"}, requested_at=now(), requested_from="x")
    )
    assert control.read_switch_request().request_id == "r1"
    control.remove(ControlArea.SWITCH_REQUEST)
    control.remove(ControlArea.SWITCH_REQUEST)  # twice: a missing file is no error
    assert control.read_switch_request() is None


def test_progress_rolls_segments_and_a_second_reader_sees_every_new_one(store: Any) -> None:
    reader = _area(store)
    writer = _other_client(reader)  # the driver, in another process
    for batch in range(3):
        writer.append_progress({"deployment_id": "d1", "batch_id": batch})
    assert [e["batch_id"] for e in reader.read_progress()] == [0, 1, 2]
    for batch in range(3, 205):
        writer.append_progress({"deployment_id": "d1", "batch_id": batch})
    assert [e["batch_id"] for e in reader.read_progress("d1")] == list(range(205))
    assert reader.latest_progress("d1")["batch_id"] == 204


def test_incidents_are_kept_once_each(store: Any) -> None:
    control = _area(store)
    crash = Incident(at=now(), kind=Kind.CRASH, deployment_id="d1", since=now(), error="boom")
    assert record_incident(control, crash)
    assert not record_incident(control, crash)
    assert [i.kind for i in read_incidents(control)] == [Kind.CRASH]


def test_holds_bump_the_fence_and_a_revocation_makes_a_grant_stale(store: Any) -> None:
    control = _area(store)
    grant = take(control, RUN_A, 60)
    assert grant.token == 1 and fence.current_token(control) == 1
    with pytest.raises(JobHeldError):
        take(control, RUN_B, 60)
    revoke(control, Holder("process 9 on h", "stop --force"), "stop --force")
    with pytest.raises(Exception, match="may no longer change"):
        grant.fence.check()
    assert take(control, RUN_B, 60).token == 3
    release(control, RUN_B)


def _race(url: str, trials: int, barrier: Any, results: Any, who: str) -> None:
    """One racer: for each trial, read the token, wait for the other racer, claim the next one."""
    for trial in range(trials):
        control = ControlArea(f"{url}-{trial}.async-stream")
        seen = fence.current_token(control)
        barrier.wait(30)
        try:
            fence.bump(control, f"taken by {who}", seen)
            results.put((trial, who, True))
        except JobHeldError:
            results.put((trial, who, False))


def test_two_processes_racing_for_the_next_token_exactly_one_wins_every_time(store: Any) -> None:
    url = store.url(f"race-{uuid.uuid4().hex[:8]}")
    context = multiprocessing.get_context("spawn")  # fresh clients, the environment's endpoint
    barrier, results = context.Barrier(2), context.Queue()
    racers = [context.Process(target=_race, args=(url, TRIALS, barrier, results, who)) for who in ("a", "b")]
    for racer in racers:
        racer.start()
    outcomes = [results.get(timeout=120) for _ in range(2 * TRIALS)]
    for racer in racers:
        racer.join(30)
        assert racer.exitcode == 0
    for trial in range(TRIALS):
        wins = [who for t, who, won in outcomes if t == trial and won]
        assert len(wins) == 1, f"trial {trial}: winners {wins}"
        assert fence.current_token(ControlArea(f"{url}-{trial}.async-stream")) == 1


def test_the_fleet_index_lists_what_another_client_wrote(store: Any) -> None:
    index = FleetIndex(store.url(f"fleet-{uuid.uuid4().hex[:8]}"))
    assert index.names() == []
    other = FleetIndex(index.url)
    other.fs = type(index.fs)(skip_instance_cache=True)
    other.record_active("orders", store.url("orders.async-stream"), "run-1")
    assert index.names() == ["orders"]
    assert index.lookup("orders").control_area == store.url("orders.async-stream")
    remembered: dict[str, Any] = {}
    assert dict(index.entries(remembered))["orders"].control_area == store.url("orders.async-stream")
    assert remembered["orders"][0] is not None  # the store's ETag: an unchanged entry is not read again
    other.record_active("orders", store.url("moved/orders.async-stream"), "run-2")
    assert dict(index.entries(remembered))["orders"].control_area == store.url("moved/orders.async-stream")


def test_the_checkpoint_reader_over_a_copied_checkpoint_sees_new_commits(store: Any, tmp_path: Path) -> None:
    local = make_checkpoint(tmp_path / "ck", offsets=[0, 1, 2, 3], commits=[0, 1, 2])
    url = store.url(f"ck-{uuid.uuid4().hex[:8]}")
    assert copy_tree(Path(local), url) >= 8
    assert batch_ids(url, "commits") == [0, 1, 2]
    inspection = inspect_checkpoint(url)
    assert inspection.latest_commit == 2 and inspection.latest_offset == 3
    before = check_commits(url, 2, 1)
    assert not before.done
    fs, root = fsspec.core.url_to_fs(url, skip_instance_cache=True)  # the driver, in another process
    fs.pipe_file(f"{root}/commits/3", (Path(local) / "commits" / "2").read_bytes())  # the driver commits batch 3
    assert check_commits(url, 2, 1).done  # a poller's client must not answer from its cached listing


@pytest.mark.parametrize("store", ["s3"], indirect=True)
def test_on_s3_a_read_is_one_get_and_a_missing_record_one_404(store: Any) -> None:
    control = _area(store)
    control.write_json(ControlArea.STATUS, {"state": "running"})
    store.reset()
    control.read_json(ControlArea.STATUS)
    control.stop_request_for("d1")  # what the driver polls for: usually not there
    assert dict(store.requests.counts) == {"GET": 2}  # no HEAD for the size, no LIST to tell a folder apart


def test_a_missing_bucket_is_never_created_and_a_write_there_says_it_is_missing(store: Any) -> None:
    url = store.url("ck.async-stream").replace(f"://{getattr(store, 'bucket', None) or store.container}/", "://typo/")
    control = ControlArea(url)
    control.ensure()  # s3fs's and adlfs's makedirs would create the bucket or container
    with pytest.raises(ControlAreaError, match=r"typo/ck\.async-stream/progress/.*: its bucket or container does"):
        control.append_progress({"deployment_id": "d1", "batch_id": 0})
    with pytest.raises(
        ControlAreaError,
        match=r"cannot write .*typo/ck\.async-stream/status\.json: its bucket or "
        r"container does not exist",
    ):
        control.write_json(ControlArea.STATUS, {"state": "running"})
    assert not fsspec.core.url_to_fs(url)[0].exists("typo")
