"""Object-store APIs on 127.0.0.1 for the tests: moto's S3 server (reached through s3fs) and Azurite's Blob
service (reached through adlfs), each started by a test and stopped after it.

The S3 server counts every request it serves by kind (PUT, GET, HEAD, LIST, DELETE) with the bytes uploaded
and downloaded: the control area's cost model is counted here, on the server, whichever process sent them.
It serves one request at a time, so a conditional create (``If-None-Match: *``) is as atomic as on S3.
"""

from __future__ import annotations

import collections
import contextlib
import os
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import fsspec
import pytest
from werkzeug.serving import WSGIRequestHandler

__all__ = ["S3Server", "Azurite", "s3_server", "azurite", "AZURITE", "copy_tree", "store"]

ROOT = Path(__file__).resolve().parents[1]
#: Where scripts/stores.sh installs Azurite (npm's `azurite`).
AZURITE = ROOT / ".node" / "node_modules" / ".bin" / "azurite-blob"
_AZURITE_ACCOUNT = "devstoreaccount1"
# Azurite's documented development account key (not a secret: every Azurite accepts it).
_AZURITE_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="


def _kind(method: str, path: str, query: str) -> str:
    """A request's kind as S3 bills it: LIST is a GET of a bucket (path-style: ``/bucket``)."""
    on_bucket = path.strip("/").count("/") == 0
    if method == "GET" and on_bucket:
        return "LIST"
    if method == "POST" and "delete" in query:
        return "DELETE"
    return method


@dataclass
class Requests:
    """What the S3 server served since the last reset: counts by kind, bytes in and out, by key prefix."""

    counts: collections.Counter[str] = field(default_factory=collections.Counter)
    bytes_in: int = 0
    bytes_out: int = 0
    lines: list[tuple[str, str, int]] = field(default_factory=list)  # (kind, path, bytes) of each request

    @property
    def writes(self) -> int:
        return self.counts["PUT"] + self.counts["DELETE"] + self.counts["POST"]

    def under(self, prefix: str) -> Requests:
        """Only the requests for keys under ``/<bucket>/<prefix>``."""
        mine = Requests()
        for kind, path, size in self.lines:
            if path.startswith(prefix):
                mine.add(kind, path, size)
        return mine

    def add(self, kind: str, path: str, size: int) -> None:
        self.counts[kind] += 1
        self.lines.append((kind, path, size))
        if kind == "PUT":
            self.bytes_in += size
        else:
            self.bytes_out += size


class _Counting:
    """WSGI middleware: counts each request, then hands it to moto."""

    def __init__(self, app: Callable[..., Any], server: S3Server) -> None:
        self.app, self.server = app, server

    def __call__(self, environ: dict[str, Any], start_response: Callable[..., Any]) -> Iterable[bytes]:
        method, query = environ["REQUEST_METHOD"], environ.get("QUERY_STRING", "")
        path = environ.get("PATH_INFO", "")
        kind = _kind(method, path, query)
        body = list(self.app(environ, start_response))
        size = int(environ.get("CONTENT_LENGTH") or 0) if method == "PUT" else sum(len(b) for b in body)
        with self.server.lock:
            self.server.requests.add(kind, path, size)
        return body


class _Quiet(WSGIRequestHandler):
    def log_request(self, *args: Any, **kwargs: Any) -> None:
        pass


class S3Server:
    """moto's S3 server on 127.0.0.1 with one bucket; ``url(key)`` is an s3:// URL into it."""

    def __init__(self, bucket: str = "streams") -> None:
        from moto.server import DomainDispatcherApplication, create_backend_app
        from werkzeug.serving import make_server

        self.bucket = bucket
        self.lock = threading.Lock()
        self.requests = Requests()
        app = _Counting(DomainDispatcherApplication(create_backend_app), self)
        self._server = make_server("127.0.0.1", 0, app, threaded=False, request_handler=_Quiet)
        self.endpoint = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="moto-s3", daemon=True)

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to reach the server: credentials, the region, s3fs's endpoint."""
        return {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "FSSPEC_S3_ENDPOINT_URL": self.endpoint,
        }

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key.strip('/')}"

    def reset(self) -> None:
        with self.lock:
            self.requests = Requests()

    def start(self) -> None:
        self._thread.start()
        import boto3

        boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            region_name="us-east-1",
        ).create_bucket(Bucket=self.bucket)
        self.reset()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


class Azurite:
    """Azurite's Blob service on 127.0.0.1, its files in a test's folder, with one container; ``url(key)`` is an abfs:// URL."""

    def __init__(self, workdir: Path, container: str = "streams") -> None:
        self.container = container
        self.workdir = workdir
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}/{_AZURITE_ACCOUNT}"
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={_AZURITE_ACCOUNT};AccountKey={_AZURITE_KEY};"
            f"BlobEndpoint={self.endpoint};"
        )

    @property
    def env(self) -> dict[str, str]:
        """What a process needs to reach it: adlfs reads the connection string from the environment."""
        return {"AZURE_STORAGE_CONNECTION_STRING": self.connection_string}

    def url(self, key: str) -> str:
        return f"abfs://{self.container}/{key.strip('/')}"

    def start(self) -> None:
        if not AZURITE.exists():
            raise RuntimeError(f"Azurite is not installed at {AZURITE}: run `bash scripts/stores.sh`")
        log = open(self.workdir / "azurite.log", "wb")  # noqa: SIM115 - the process writes it until stopped
        self._process = subprocess.Popen(
            [
                str(AZURITE),
                "--blobHost",
                "127.0.0.1",
                "--blobPort",
                str(self.port),
                "--location",
                str(self.workdir),
                "--skipApiVersionCheck",
                "--loose",
                "--silent",
                "--disableTelemetry",
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", self.port), timeout=1):
                break
            if self._process.poll() is not None:
                raise RuntimeError(f"Azurite exited {self._process.returncode}: {(self.workdir / 'azurite.log')}")
            time.sleep(0.1)
        else:
            raise RuntimeError("Azurite did not listen within 30 s")
        from azure.storage.blob import BlobServiceClient

        BlobServiceClient.from_connection_string(self.connection_string).create_container(self.container)

    def stop(self) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()


@contextlib.contextmanager
def _environment(env: dict[str, str]) -> Iterator[None]:
    """Set ``env`` for this process and its children, and fsspec's config read from it at import. The clients
    made before are dropped: adlfs reads its connection string from the environment, not from its arguments,
    so a cached client would still reach the Azurite of an earlier test module."""
    before = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    conf_before = {k: dict(v) for k, v in fsspec.config.conf.items()}
    fsspec.config.set_conf_env(fsspec.config.conf)
    _forget_clients()
    try:
        yield
    finally:
        _forget_clients()
        for key, value in before.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        fsspec.config.conf.clear()
        fsspec.config.conf.update(conf_before)


def _forget_clients() -> None:
    for protocol in ("s3", "abfs"):
        fsspec.get_filesystem_class(protocol).clear_instance_cache()


@pytest.fixture(scope="module", params=["s3", "azure"])
def store(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Each test of a module once on moto's S3 server, once on Azurite (``indirect`` parametrizing picks one)."""
    if request.param == "s3":
        with s3_server() as server:
            yield server
    else:
        with azurite(tmp_path_factory.mktemp("azurite")) as service:
            yield service


@contextlib.contextmanager
def s3_server() -> Iterator[S3Server]:
    server = S3Server()
    server.start()
    try:
        with _environment(server.env):
            yield server
    finally:
        server.stop()


@contextlib.contextmanager
def azurite(workdir: Path) -> Iterator[Azurite]:
    service = Azurite(workdir)
    service.start()
    try:
        with _environment(service.env):
            yield service
    finally:
        service.stop()


def copy_tree(local: Path, url: str) -> int:
    """Copy a local folder to ``url`` file by file (as a checkpoint is laid out); how many files were copied."""
    fs, root = fsspec.core.url_to_fs(url)
    count = 0
    for path in sorted(p for p in local.rglob("*") if p.is_file()):
        fs.pipe_file(f"{root}/{path.relative_to(local).as_posix()}", path.read_bytes())
        count += 1
    return count


@contextlib.contextmanager
def control_area_at(checkpoint: str, url: str) -> Iterator[None]:
    """Put the control area of ``checkpoint`` at ``url`` (an object store) for deploys from this process: the
    driver's checkpoint stays local (Spark here has no object-store jar), its control area is the store's."""
    from airflow_async_stream.state.control import ControlArea

    original = ControlArea.for_checkpoint.__func__  # type: ignore[attr-defined]

    def for_checkpoint(cls: type[ControlArea], path: str) -> ControlArea:
        return cls(url) if path.rstrip("/") == checkpoint.rstrip("/") else original(cls, path)

    ControlArea.for_checkpoint = classmethod(for_checkpoint)  # type: ignore[method-assign, assignment]
    try:
        yield
    finally:
        ControlArea.for_checkpoint = classmethod(original)  # type: ignore[method-assign, assignment]
