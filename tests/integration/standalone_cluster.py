"""A real Spark standalone cluster on 127.0.0.1: one master and one worker from the pyspark distribution."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import until
from tests.spark_class_archive import spark_home

WORKER_CORES = 2
WORKER_MEMORY = "2g"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class StandaloneCluster:
    master_url: str
    master_ui: str
    worker_ui: str

    @staticmethod
    def _json(url: str) -> dict[str, Any]:
        with urllib.request.urlopen(f"{url}/json/", timeout=5) as response:  # noqa: S310 (127.0.0.1 only)
            return dict(json.load(response))

    def master_status(self) -> dict[str, Any]:
        return self._json(self.master_ui)

    def worker_status(self) -> dict[str, Any]:
        return self._json(self.worker_ui)


def _start(args: list[str], log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "SPARK_NO_DAEMONIZE": "1"}
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(spark_home() / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )


@pytest.fixture(scope="module")
def standalone_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StandaloneCluster]:
    """Start master and worker, wait until the master counts the worker alive; stop both afterwards."""
    logs = tmp_path_factory.mktemp("standalone")
    port, master_ui_port, worker_ui_port = _free_port(), _free_port(), _free_port()
    master_url = f"spark://127.0.0.1:{port}"
    master = _start(
        [
            "org.apache.spark.deploy.master.Master",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--webui-port",
            str(master_ui_port),
        ],
        logs / "master.log",
    )
    worker = _start(
        [
            "org.apache.spark.deploy.worker.Worker",
            "--host",
            "127.0.0.1",
            "--cores",
            str(WORKER_CORES),
            "--memory",
            WORKER_MEMORY,
            "--webui-port",
            str(worker_ui_port),
            master_url,
        ],
        logs / "worker.log",
    )
    cluster = StandaloneCluster(master_url, f"http://127.0.0.1:{master_ui_port}", f"http://127.0.0.1:{worker_ui_port}")
    try:

        def up() -> bool:
            try:
                return bool(cluster.master_status().get("aliveworkers", 0) >= 1)
            except OSError:
                return False

        try:
            until(lambda: up() or master.poll() is not None or worker.poll() is not None, 120, every_s=0.5)
            assert up(), "a process of the cluster exited"
        except AssertionError as exc:
            raise RuntimeError(
                f"the standalone cluster did not come up ({exc}):\n"
                + (logs / "master.log").read_text()[-2000:]
                + (logs / "worker.log").read_text()[-2000:]
            ) from None
        yield cluster
    finally:
        for process in (worker, master):
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in (worker, master):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
