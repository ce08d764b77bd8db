"""What integration tests share: job specs, DAG files and runs, checkpoint snapshots, a driver watch, a browser."""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import textwrap
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.spec.load import deep_merge, parse_spec
from tests.session import DAGS_FOLDER, REPO

USER_CODE = Path(__file__).resolve().parent / "user_code"


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


#: What every job DAG file imports (an unused import costs nothing in a DAG file: the factories load lazily).
_JOB_DAG_IMPORTS = """from pathlib import Path
from airflow.sdk import dag, task
from airflow_async_stream.factories import safe_disable_async_progress
from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator
from airflow_async_stream.sensors import CommittedBatchesSensor
from airflow_async_stream.state.checkpoint import latest_batch
"""


def write_job_dag(dag_id: str, spec: dict[str, Any], body: str, dag_args: str = "schedule=None") -> Path:
    """Write a DAG file for one job: ``SPEC`` is its spec, the provider's operators, sensor and factory are
    imported, and ``body`` (tasks and their order, at any indent) is the DAG function's."""
    function = textwrap.indent(textwrap.dedent(body).strip("\n"), "    ")
    text = f"{_JOB_DAG_IMPORTS}\nSPEC = {spec!r}\n\n\n@dag({dag_args})\ndef {dag_id}():\n{function}\n\n\n{dag_id}()\n"
    return write_dag(dag_id, text)


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


#: Chromium's flags on a machine with no network beyond loopback (no background fetches, no first-run, as root).
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@contextlib.contextmanager
def browser() -> Iterator[Any]:
    """Debian's headless chromium driven by Playwright; fails naming the install command when it is missing."""
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium")
    assert chromium, "Debian's chromium is missing: run `bash scripts/browser.sh` (apt-get install -y chromium)"
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def output_folder(name: str) -> Path:
    """A folder for what a test leaves to look at (screenshots): ``test-output/<name>`` in the repository, or
    under ``$ASYNC_STREAM_TEST_OUTPUT``."""
    folder = Path(os.environ.get("ASYNC_STREAM_TEST_OUTPUT") or REPO / "test-output") / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def bare_driver_conf(python: str) -> dict[str, str]:
    """The settings that make Spark run a job's driver (and its executors' Python) with ``python``."""
    return {"spark.pyspark.driver.python": python, "spark.pyspark.python": python}


def assert_ran_from_the_bundle(status: dict, python: str) -> None:
    """The driver ran ``python``, imported our package from the bundle and pyspark from Spark's own zip."""
    bundle = runtime_bundle()
    assert status["runtime"]["executable"] == python
    assert (status["runtime"]["bundle"], status["runtime"]["from"]) == (bundle.key, str(bundle.site))
    assert ".zip" in status["pyspark"]["from"], status["pyspark"]  # nothing installed: Spark's zipped pyspark
