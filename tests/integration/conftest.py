"""Fixtures for integration tests: a migrated Airflow database, DAG runs, and no driver left behind."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.lifecycle import stop_driver
from airflow_async_stream.spec.model import deep_merge, parse_spec
from airflow_async_stream.state.control import ControlArea, liveness
from tests.conftest import CHECKPOINT_ROOT, DAGS_FOLDER
from tests.integration.standalone_cluster import standalone_cluster  # noqa: F401 (a fixture for the cluster tests)
from tests.spark_class_archive import ensure_archive, submit_opts

USER_CODE = Path(__file__).resolve().parent / "user_code"


@pytest.fixture(scope="session", autouse=True)
def spark_class_archive() -> Path | None:
    """Every driver of the session maps Spark's classes from one archive (see tests/spark_class_archive.py)."""
    archive = ensure_archive()
    os.environ["SPARK_SUBMIT_OPTS"] = submit_opts(archive)
    return archive


@pytest.fixture(scope="session")
def airflow_db() -> None:
    """`airflow db migrate` once per session, on the private SQLite database."""
    subprocess.run(
        [str(Path(sys.executable).parent / "airflow"), "db", "migrate"],
        check=True,
        capture_output=True,
    )


@pytest.fixture
def checkpoint_dir() -> str:
    return str(CHECKPOINT_ROOT / f"ck-{uuid.uuid4().hex[:8]}")


@pytest.fixture(autouse=True)
def no_driver_left_behind() -> Iterator[None]:
    """After each test, stop (and if need be kill) any driver still live on a test checkpoint."""
    yield
    for control_dir in CHECKPOINT_ROOT.rglob("*.async-stream"):
        control = ControlArea(str(control_dir))
        if liveness(control.read_json(ControlArea.STATUS)).live:
            stop_driver(control, "test clean-up", graceful_timeout_s=5, kill_after_s=30)


@pytest.fixture
def user_code_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """Make tests/integration/user_code importable by the Spark driver (it inherits PYTHONPATH)."""
    monkeypatch.setenv("PYTHONPATH", str(USER_CODE))
    return USER_CODE


def fleet_job(root: Path, name: str, **changes: Any) -> dict[str, Any]:
    """A rollout test's job spec: rate -> noop, async on, checkpoint ``root/name``, ``changes`` merged in."""
    spec = {
        "name": name,
        "checkpoint": str(root / name),
        "source": {"format": "rate", "options": {"rowsPerSecond": 20}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "2 seconds"},  # several drivers run at once: each batch costs CPU
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 1000},
    }
    return parse_spec(deep_merge(spec, changes)).to_mapping()


def write_dag(dag_id: str, body: str) -> Path:
    """Write a DAG file into the configured dags folder (dag.test needs it there) and return its path."""
    path = DAGS_FOLDER / f"{dag_id}.py"
    path.write_text(textwrap.dedent(body))
    return path


def load_dag(path: Path, dag_id: str) -> Any:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=str(path))
    assert not bag.import_errors, bag.import_errors
    return bag.get_dag(dag_id)


def run_dag(path: Path, dag_id: str) -> Any:
    """Run a DAG through Airflow with dag.test() and return the DagRun."""
    return load_dag(path, dag_id).test()


def run_dag_while(path: Path, dag_id: str, step: Callable[[], bool]) -> Any:
    """Run a DAG with dag.test() while a thread calls ``step`` every 20 ms until it returns True
    (a fault injected, a stop requested at the right moment); return the DagRun."""
    done = threading.Event()

    def watch() -> None:
        while not done.is_set() and not step():
            done.wait(0.02)

    watcher = threading.Thread(target=watch, name="dag-run-watch", daemon=True)
    watcher.start()
    try:
        return run_dag(path, dag_id)
    finally:
        done.set()
        watcher.join()


def checkpoint_files(checkpoint: str) -> dict[str, str]:
    """Every file Spark has finished writing in a checkpoint, with a digest.

    Spark's own in-flight temp files (`.N.<uuid>.tmp` and their `..N.<uuid>.tmp.crc` checksums) are excluded:
    a snapshot of a running job catches them mid-write, and Spark itself renames them into place moments later.
    """
    root = Path(checkpoint)
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in root.rglob("*")
        if p.is_file() and not p.name.endswith((".tmp", ".tmp.crc"))
    }


def fail_running_dag_runs(dag_id: str) -> None:
    """What the scheduler does with a run whose worker died: its tasks become zombies, the run fails."""
    from airflow.models.dagrun import DagRun
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState

    with create_session() as session:
        for run in session.query(DagRun).filter(DagRun.dag_id == dag_id, DagRun.state == DagRunState.RUNNING):
            run.state = DagRunState.FAILED


def task_states(dag_run: Any) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in dag_run.get_task_instances()}


def xcom(dag_run: Any, task_id: str) -> Any:
    ti = next(ti for ti in dag_run.get_task_instances() if ti.task_id == task_id)
    return ti.xcom_pull(task_ids=task_id)


class DriverWatch:
    """Samples this host's processes every 20 ms and counts the spark-submit process groups whose command
    line names ``marker`` (a checkpoint): two at once would be two drivers overlapping on one checkpoint."""

    def __init__(self, marker: str) -> None:
        self.marker = marker.encode()
        self.most_at_once = 0
        self.groups_seen: set[int] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="driver-watch", daemon=True)

    def _groups(self) -> set[int]:
        groups = set()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if self.marker not in cmdline or b"--control-area" not in cmdline:
                    continue  # not a driver (the log pump names the checkpoint too, in its log's path)
                stat = (entry / "stat").read_text().rsplit(")", 1)[-1].split()
            except OSError:
                continue
            if stat[0] != "Z":
                groups.add(int(stat[2]))  # field 5: the process group (spark-submit leads its own)
        return groups

    def _run(self) -> None:
        while not self._done.wait(0.02):
            groups = self._groups()
            self.groups_seen |= groups
            self.most_at_once = max(self.most_at_once, len(groups))

    def __enter__(self) -> DriverWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._done.set()
        self._thread.join()
