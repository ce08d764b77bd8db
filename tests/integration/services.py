"""Redis and PostgreSQL servers for one test, from Debian's packages (scripts/services.sh installs them): a
Celery broker and Airflow's metadata database, each on a free port of 127.0.0.1, in its own process group,
its files in a fresh folder removed at the end. A missing package fails naming the install command."""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.helpers import until

INSTALL = "apt-get install -y redis-server postgresql (scripts/services.sh runs it)"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM its process group, SIGKILL after 10 s."""
    for sig, wait_s in ((signal.SIGTERM, 10.0), (signal.SIGKILL, 30.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        try:
            process.wait(timeout=wait_s)
            break
        except subprocess.TimeoutExpired:
            continue


class Redis:
    """A Redis server without persistence: the Celery broker."""

    def __init__(self) -> None:
        binary = shutil.which("redis-server")
        assert binary, f"the multi-host test needs Debian's redis-server: {INSTALL}"
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="aas-redis-"))
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(self.folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        until(self._pong, 30, what="redis-server", alive=self.process)

    def _pong(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def close(self) -> None:
        _stop(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)


class Postgres:
    """A PostgreSQL cluster (trust auth on 127.0.0.1, no fsync) with an ``airflow`` database, run as the
    ``postgres`` user when this is root (PostgreSQL refuses to run as root)."""

    def __init__(self) -> None:
        found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
        assert found, f"the multi-host test needs Debian's postgresql: {INSTALL}"
        binaries = found[-1].parent
        self.port = _free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="aas-postgres-"))  # under /tmp: the postgres user reaches it
        as_user: dict[str, Any] = {}
        if os.geteuid() == 0:
            account = pwd.getpwnam("postgres")
            os.chown(self.folder, account.pw_uid, account.pw_gid)
            as_user = {"user": account.pw_uid, "group": account.pw_gid, "extra_groups": []}
        data = self.folder / "data"
        subprocess.run(
            [str(binaries / "initdb"), "-D", str(data), "--auth=trust", "-U", "postgres", "--no-sync"],
            check=True,
            capture_output=True,
            **as_user,
        )
        self.process = subprocess.Popen(
            [
                str(binaries / "postgres"),
                "-D",
                str(data),
                "-p",
                str(self.port),
                "-k",
                str(self.folder),
                "-c",
                "listen_addresses=127.0.0.1",
                "-c",
                "fsync=off",
                "-c",
                "max_connections=200",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **as_user,
        )
        until(self._create_database, 60, what="postgres", alive=self.process)

    def _create_database(self) -> bool:
        import psycopg2

        try:
            connection = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="postgres")
        except psycopg2.OperationalError:
            return False
        connection.autocommit = True  # CREATE DATABASE runs outside a transaction
        try:
            with connection.cursor() as cursor:
                cursor.execute("CREATE DATABASE airflow")
        finally:
            connection.close()
        return True

    @property
    def url(self) -> str:
        return f"postgresql+psycopg2://postgres@127.0.0.1:{self.port}/airflow"

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        import psycopg2

        connection = psycopg2.connect(host="127.0.0.1", port=self.port, user="postgres", dbname="airflow")
        try:
            with connection.cursor() as cursor:
                cursor.execute(sql.replace("?", "%s"), params)
                return list(cursor.fetchall())
        finally:
            connection.close()

    def close(self) -> None:
        _stop(self.process)
        shutil.rmtree(self.folder, ignore_errors=True)
