"""A real Airflow deployment as a platform team runs it across hosts: the CeleryExecutor with a Redis broker
and a PostgreSQL metadata database (tests/integration/services.py), api-server, scheduler, dag-processor and
triggerer, and Celery workers each serving its own queue, one of them on another host: under ``unshare --uts
--pid --fork --mount-proc`` with its own hostname, pid space and HOME, over the same files.

Killing a worker on another host kills its pid space, and with it the drivers it launched, as a lost host
would; ``close`` stops every component by process group (AirflowStack)."""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from tests.integration.airflow_stack import AirflowStack
from tests.integration.services import Postgres, Redis


class CeleryStack(AirflowStack):
    """AirflowStack on Postgres with the CeleryExecutor; ``worker`` starts a Celery worker on a host."""

    def __init__(self, home: Path, postgres: Postgres, redis: Redis, **settings: str) -> None:
        super().__init__(
            home,
            database__sql_alchemy_conn=postgres.url,
            core__executor="CeleryExecutor",
            celery__broker_url=redis.url,
            celery__result_backend="db+" + postgres.url.replace("+psycopg2", ""),
            **settings,
        )
        self.postgres = postgres

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        return self.postgres.query(sql, *params)

    def worker(self, name: str, queue: str, host: str | None = None) -> None:
        """A Celery worker serving ``queue``: on this host, or on ``host`` (own hostname and pid space). Each
        has its own HOME and no AIRFLOW_ASYNC_STREAM_HOME, so no host reads another's job registry."""
        home = self.home / f"{name}-home"
        home.mkdir(exist_ok=True)
        env = {k: v for k, v in self.env.items() if k != "AIRFLOW_ASYNC_STREAM_HOME"} | {"HOME": str(home)}
        prefix: tuple[str, ...] = ()
        if host is not None:
            hosts = home / "hosts"  # its own /etc/hosts naming it, as a real host's does (Spark resolves its name)
            hosts.write_text(Path("/etc/hosts").read_text() + f"127.0.0.1 {host}\n")
            become = f'hostname {host} && mount --bind {hosts} /etc/hosts && exec "$0" "$@"'
            prefix = ("unshare", "--uts", "--pid", "--fork", "--mount-proc", "sh", "-c", become)
        self.start(
            name,
            "celery",
            "worker",
            "--queues",
            queue,
            "--concurrency",
            "2",
            "--celery-hostname",
            f"{name}@{host or socket.gethostname()}",
            "--pid",
            str(self.home / f"{name}.pid"),
            "--skip-serve-logs",
            "--without-mingle",
            "--without-gossip",
            prefix=prefix,
            env=env,
        )
