"""A real Airflow deployment for one test: api-server, scheduler, dag-processor and triggerer as separate
processes (LocalExecutor, SQLite, a temporary AIRFLOW_HOME), as users run it on one host.

Each component runs in its own session, so stopping it by its pid's process group also stops what it
forked (the LocalExecutor's workers and their task processes). ``close`` stops every component it started,
gracefully then by SIGKILL; Spark drivers are detached by design and stopped by the test's own clean-up.
"""

from __future__ import annotations

import os
import secrets
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from airflow_async_stream.state.control import ControlArea
from tests.helpers import until

AIRFLOW = str(Path(sys.executable).parent / "airflow")
T = TypeVar("T")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class AirflowStack:
    """The components of one Airflow deployment under ``home``, reading DAGs from ``home/dags``."""

    def __init__(self, home: Path, **settings: str) -> None:
        self.home = home
        self.dags = home / "dags"
        self.dags.mkdir(parents=True, exist_ok=True)
        self.db = home / "airflow.db"
        port = _free_port()
        self.env = {
            **os.environ,
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{self.db}",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
            "AIRFLOW__CORE__AUTH_MANAGER": (
                "airflow.api_fastapi.auth.managers.simple.simple_auth_manager.SimpleAuthManager"
            ),
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://127.0.0.1:{port}/execution/",
            "AIRFLOW__API__HOST": "127.0.0.1",
            "AIRFLOW__API__PORT": str(port),
            "AIRFLOW__API_AUTH__JWT_SECRET": secrets.token_hex(32),
            "AIRFLOW__API__SECRET_KEY": secrets.token_hex(16),
            **{f"AIRFLOW__{key.upper()}": value for key, value in settings.items()},
        }
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.started: list[str] = []

    def airflow(self, *args: str, timeout: float = 120) -> str:
        """Run an ``airflow`` command against this deployment; its output, or an error showing it."""
        done = subprocess.run([AIRFLOW, *args], env=self.env, capture_output=True, text=True, timeout=timeout)
        assert done.returncode == 0, f"airflow {' '.join(args)}: {done.stdout[-2000:]}{done.stderr[-2000:]}"
        return done.stdout

    def start(
        self, name: str, *command: str, prefix: tuple[str, ...] = (), env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """Start a component (``name`` e.g. ``triggerer-2``), logging to ``home/<name>.log``; ``prefix`` runs it
        under another command (``unshare ...``: another host), ``env`` in place of the deployment's."""
        log = open(self.home / f"{name}.log", "wb")  # noqa: SIM115 - the process writes it until stopped
        proc = subprocess.Popen(
            [*prefix, AIRFLOW, *command],
            env=env or self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        self.procs[name] = proc
        self.started.append(name)
        return proc

    def kill(self, name: str) -> None:
        """SIGKILL a component and everything in its process group, as a crashed host would lose them."""
        proc = self.procs.pop(name)
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)

    def close(self) -> None:
        """Stop every component still running: SIGTERM, then SIGKILL after 20 s; then any process they
        started that outlived them (a task process runs in its own process group), if it is still the same
        process (same start time)."""
        spawned = {pid_start for proc in self.procs.values() for pid_start in _descendants(proc.pid)}
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + 20
        for proc in self.procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(timeout=30)
        self.procs.clear()
        for pid, start in spawned:
            if _start_time(pid) == start:
                os.kill(pid, signal.SIGKILL)

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        """Read Airflow's database directly (read-only)."""
        with sqlite3.connect(f"file:{self.db}?mode=ro", uri=True, timeout=30) as db:
            return list(db.execute(sql, params))

    def log(self, name: str) -> str:
        return (self.home / f"{name}.log").read_text(errors="replace")

    def await_(self, probe: Callable[[], T | None], what: str, timeout_s: float) -> T:
        """Poll ``probe`` every 0.2 s until it answers; fail naming ``what`` and the component that died."""

        def answer() -> T | None:
            if found := probe():
                return found
            dead = [name for name, proc in self.procs.items() if proc.poll() is not None]
            assert not dead, f"{dead} exited while waiting for {what}: {self.log(dead[0])[-3000:]}"
            return None

        found: T = until(answer, timeout_s, what=what, every_s=0.2)
        return found


def _start_time(pid: int) -> str | None:
    """A process's start time (clock ticks after boot), which tells it apart from a later one with its pid."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def _descendants(root: int) -> set[tuple[int, str]]:
    """Every live descendant of ``root`` with its start time, read from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = set(), list(children.get(root, []))
    while todo:
        pid = todo.pop()
        start = _start_time(pid)
        if start is not None:
            found.add((pid, start))
            todo.extend(children.get(pid, []))
    return found


class Feeder:
    """Gives the job one single-row file at a time, the next once the job has read every row given so far."""

    def __init__(self, stack: AirflowStack, checkpoint: str, incoming: Path) -> None:
        self.stack, self.control, self.incoming, self.given = stack, ControlArea.for_checkpoint(checkpoint), incoming, 0

    def feed_until(self, probe: Callable[[], T | None], what: str, timeout_s: float) -> T:
        """Feed while awaiting ``probe``'s answer."""

        def fed_probe() -> T | None:
            answer = probe()
            if not answer and sum(e["num_input_rows"] for e in self.control.read_progress()) >= self.given:
                self.given += 1
                (self.incoming / f"{self.given:05d}.json").write_text(f'{{"v": {self.given}}}\n')
            return answer

        return self.stack.await_(fed_probe, what, timeout_s)
