"""The inspector on hand-made checkpoint folders, laid out as Spark writes them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_async_stream.state.checkpoint import batch_ids, inspect_checkpoint
from tests.helpers import make_checkpoint as make
from tests.helpers import snapshot


def test_empty_checkpoint_is_safe(tmp_path: Path) -> None:
    result = inspect_checkpoint(make(tmp_path, [], []))
    assert result.sync_restart_safe and result.latest_offset is None and result.latest_commit is None
    assert "starts from the beginning" in result.reason


def test_only_batch_zero(tmp_path: Path) -> None:
    committed = inspect_checkpoint(make(tmp_path / "a", [0], [0]))
    assert committed.sync_restart_safe and "resumes at batch 1" in committed.reason
    planned = inspect_checkpoint(make(tmp_path / "b", [0], []))
    assert planned.sync_restart_safe and "re-runs batch 0" in planned.reason


def test_a_gap_before_the_latest_batch_is_unsafe(tmp_path: Path) -> None:
    result = inspect_checkpoint(make(tmp_path, [0, 4, 7], [0, 4, 7]))
    assert not result.sync_restart_safe
    assert "offsets/6 is missing" in result.reason and "batch 6 doesn't exist" in result.reason
    assert result.offsets.gaps == [[1, 3], [5, 6]] and result.commits.gaps == [[1, 3], [5, 6]]
    assert (result.latest_offset, result.latest_commit) == (7, 7)


def test_gaps_earlier_in_the_log_do_not_matter(tmp_path: Path) -> None:
    result = inspect_checkpoint(make(tmp_path, [0, 4, 8, 9], [0, 4, 8, 9]))
    assert result.sync_restart_safe and result.offsets.gaps == [[1, 3], [5, 7]]


def test_commit_one_behind_is_safe_two_behind_is_not(tmp_path: Path) -> None:
    assert inspect_checkpoint(make(tmp_path / "a", [5, 6, 7], [5, 6])).sync_restart_safe
    two_behind = inspect_checkpoint(make(tmp_path / "b", [5, 6, 7], [5]))
    assert not two_behind.sync_restart_safe
    assert "more than one batch behind" in two_behind.reason and "6..6" in two_behind.reason


def test_commits_ahead_of_offsets_is_inconsistent(tmp_path: Path) -> None:
    result = inspect_checkpoint(make(tmp_path, [3, 4], [3, 4, 5]))
    assert not result.sync_restart_safe and "ahead of offsets" in result.reason


def test_temp_crc_and_compact_files_are_skipped(tmp_path: Path) -> None:
    root = Path(make(tmp_path, [0, 1], [0, 1]))
    for name in (".2.0b7f3e2c-1111-2222-3333-444455556666.tmp", ".1.crc", "2.compact"):
        (root / "offsets" / name).write_text("junk")
    result = inspect_checkpoint(str(root))
    assert result.sync_restart_safe and result.offsets.ids == [0, 1]
    assert sorted(result.offsets.skipped) == sorted(
        [".2.0b7f3e2c-1111-2222-3333-444455556666.tmp", ".1.crc", "2.compact"]
    )
    assert batch_ids(str(root), "offsets") == [0, 1]


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ("garbage\n{}\n", "is corrupt: its first line should be a version"),
        ("", "an empty file"),
        ("v1\n", "is truncated"),
        ("v1\nnot json\n", "second line is not JSON"),
        ("v9\n{}\n", "has version v9"),
    ],
)
def test_bad_latest_files_are_reported_not_crashed_on(tmp_path: Path, content: str, needle: str) -> None:
    root = Path(make(tmp_path, [0, 1], [0, 1]))
    (root / "offsets" / "1").write_text(content)
    result = inspect_checkpoint(str(root))
    assert not result.sync_restart_safe
    assert any(needle in p for p in result.problems), result.problems
    assert needle in result.reason


def test_version_headers_are_reported(tmp_path: Path) -> None:
    result = inspect_checkpoint(make(tmp_path, [0, 1, 2], [0, 1, 2]))
    assert result.offsets.headers == {1: "v1", 2: "v1"}
    assert result.to_json()["offsets"]["headers"] == {"1": "v1", "2": "v1"}


#: The v2 files Spark 4.x writes (SPARK_FACTS.md): offsets with ``offsetLog.formatVersion=2`` (4.3), sources by
#: ordinal; commits with ``stateStore.checkpointFormatVersion=2``, state unique ids empty for a stateless query.
OFFSETS_V2 = 'v2\n{"batchWatermarkMs":0,"batchTimestampMs":1795874799069,"conf":{}}\n0:2\n'
COMMITS_V2 = 'v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":{}}\n'
COMMITS_V2_STATEFUL = (
    'v2\n{"nextBatchWatermarkMs":0,"stateUniqueIds":{"0":[["1b0c4e1a-8f5e-4f55-9d4c-2f7f7f0e6a11"]]}}\n'
)


@pytest.mark.parametrize("commits", [COMMITS_V2, COMMITS_V2_STATEFUL])
@pytest.mark.parametrize("offsets", ["v1", OFFSETS_V2])
def test_the_v2_formats_of_spark_4_are_read_as_spark_reads_them(tmp_path: Path, offsets: str, commits: str) -> None:
    root = Path(make(tmp_path, [0, 1, 2], [0, 1, 2]))
    for batch in (0, 1, 2):
        if offsets != "v1":
            (root / "offsets" / str(batch)).write_text(offsets)
        (root / "commits" / str(batch)).write_text(commits)
    result = inspect_checkpoint(str(root))
    assert result.sync_restart_safe and not result.problems, result.reason
    assert result.commits.headers == {1: "v2", 2: "v2"}
    (root / "commits" / "2").write_text(commits.replace("v2", "v3", 1))
    unknown = inspect_checkpoint(str(root))
    assert not unknown.sync_restart_safe and "commits/2 has version v3" in unknown.reason


def test_missing_folder(tmp_path: Path) -> None:
    result = inspect_checkpoint(str(tmp_path / "nope"))
    assert not result.exists and not result.sync_restart_safe and "no checkpoint at" in result.reason


def test_permission_denied_is_a_clear_error(tmp_path: Path) -> None:
    """offsets/ closed to the reader; as root, the inspector runs without the capabilities that bypass that."""
    root = Path(make(tmp_path, [0], [0]))
    (root / "offsets").chmod(0)
    code = (
        "from airflow_async_stream.state.checkpoint import inspect_checkpoint\n"
        "from airflow_async_stream.exceptions import CheckpointReadError\n"
        f"try: inspect_checkpoint({str(root)!r})\n"
        "except CheckpointReadError as e: print('ERROR', e)\n"
    )
    command = [sys.executable, "-c", code]
    if os.geteuid() == 0:
        command = ["setpriv", "--bounding-set=-dac_override,-dac_read_search", *command]
    try:
        result = subprocess.run(command, capture_output=True, text=True, check=True)
    finally:
        (root / "offsets").chmod(0o755)
    assert result.stdout.startswith(f"ERROR cannot list {root}/offsets: permission denied"), result.stdout


def test_inspection_changes_nothing(tmp_path: Path) -> None:
    root = Path(make(tmp_path, [0, 4, 7], [0, 4, 7], {"offsets/.7.crc": "x"}))
    before = snapshot(root)
    inspect_checkpoint(str(root))
    assert snapshot(root) == before


def test_json_carries_the_contract_keys(tmp_path: Path) -> None:
    data = json.loads(json.dumps(inspect_checkpoint(make(tmp_path, [0, 4, 7], [0, 4, 7])).to_json()))
    assert {"latest_offset", "latest_commit", "sync_restart_safe", "reason"} <= set(data)
    assert data["latest_offset"] == 7 and data["sync_restart_safe"] is False
