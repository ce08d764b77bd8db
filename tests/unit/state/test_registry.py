"""The host-local registry: driver logs of a job's older deployments do not pile up."""

from __future__ import annotations

from pathlib import Path

import pytest

from airflow_async_stream.state import registry


def test_a_deploy_keeps_the_logs_of_the_newest_deployments_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_ASYNC_STREAM_HOME", str(tmp_path))
    ids = [f"2026112{day}T010000Z-abcdef0{day}" for day in range(1, 6)]
    for deployment in ids[:4]:
        path = Path(registry.local_log_path("clicks", deployment))
        path.write_text("x")
        Path(f"{path}.1").write_text("rotated")
    other = tmp_path / "logs" / f"clicks-eu-{ids[0]}.log"  # another job whose name starts the same
    other.write_text("kept")
    newest = registry.local_log_path("clicks", ids[4])
    left = sorted(p.name for p in (tmp_path / "logs").iterdir())
    kept = [f"clicks-{d}.log{suffix}" for d in ids[2:4] for suffix in ("", ".1")]
    assert left == sorted([*kept, other.name])
    assert newest == str(tmp_path / "logs" / f"clicks-{ids[4]}.log")
