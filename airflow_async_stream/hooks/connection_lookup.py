"""Look up an Airflow connection, telling "it does not exist" apart from "it could not be read".

Airflow answers both with ``AirflowNotFoundException``: a secrets backend that fails (a vault down, a
malformed ``AIRFLOW_CONN_*`` URI, an API error) is skipped and logged at debug level only. A deploy
must not take that for "no connection" and run the job somewhere else, so on a "not found" every
configured backend is asked again, and any failure among them is an error naming the connection.
"""

from __future__ import annotations

import json
import re
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException
from airflow.sdk.log import mask_secret

from airflow_async_stream.exceptions import ConnectionLookupError, DeployError
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import ConnectionFields, SecretOptions, kafka_options

__all__ = ["extra_of", "find_connection", "secret_options_for"]

_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]*@")


def _safe(exc: BaseException) -> str:
    """An exception for a message: its type and text, credentials in URIs masked, at most 200 characters."""
    return f"{type(exc).__name__}: {_CREDENTIALS.sub('***@', str(exc))}"[:200]


def find_connection(conn_id: str) -> Any | None:
    """The connection, or None only when no secrets backend has it and none of them failed to answer."""
    try:
        return BaseHook.get_connection(conn_id)
    except AirflowNotFoundException:
        pass
    except Exception as exc:  # noqa: BLE001 - e.g. an access denied: never a reason to run elsewhere
        raise ConnectionLookupError(f"Airflow connection {conn_id!r} could not be read: {_safe(exc)}") from None
    failures = _backend_failures(conn_id)
    if failures:
        raise ConnectionLookupError(
            f"Airflow connection {conn_id!r} could not be read, so it may exist: " + "; ".join(failures)
        )
    return None


def _backend_failures(conn_id: str) -> list[str]:
    from airflow.sdk.execution_time.secrets.execution_api import ExecutionAPISecretsBackend
    from airflow.sdk.execution_time.supervisor import ensure_secrets_backend_loaded

    failures = []
    for backend in ensure_secrets_backend_loaded():
        name = type(backend).__name__
        try:
            if isinstance(backend, ExecutionAPISecretsBackend):
                problem = _api_failure(conn_id)
                if problem:
                    failures.append(f"{name}: {problem}")
            else:
                backend.get_connection(conn_id)
        except Exception as exc:  # noqa: BLE001 - every backend's own failure is reported, none hidden
            failures.append(f"{name}: {_safe(exc)}")
    return failures


def _api_failure(conn_id: str) -> str | None:
    """What Airflow's API server answered, unless it was "no such connection" (or a connection)."""
    from airflow.sdk.exceptions import ErrorType
    from airflow.sdk.execution_time.comms import ErrorResponse, GetConnection
    from airflow.sdk.execution_time.task_runner import SUPERVISOR_COMMS

    answer = SUPERVISOR_COMMS.send(GetConnection(conn_id=conn_id))
    if isinstance(answer, ErrorResponse) and answer.error != ErrorType.CONNECTION_NOT_FOUND:
        return f"the API server answered {answer.error}: {str(answer.detail)[:120]}"
    return None


def extra_of(conn: Any) -> dict[str, Any]:
    """A connection's extra as a dict; one that is not a JSON object is an error (never read as empty)."""
    try:
        extra = json.loads(conn.extra) if conn.extra else {}
    except ValueError:
        extra = None
    if not isinstance(extra, dict):
        raise ConnectionLookupError(f"the extra of Airflow connection {conn.conn_id!r} is not a JSON object")
    return extra


def connection_fields(field: str, conn_id: str) -> ConnectionFields:
    """An Airflow connection named by a spec field, or a DeployError naming that field (absent, or unreadable)."""
    try:
        conn = find_connection(conn_id)
        extra = extra_of(conn) if conn is not None else {}
    except ConnectionLookupError as exc:
        raise ConnectionLookupError(f"{field}: {exc}") from None
    if conn is None:
        raise DeployError(f"{field}: Airflow connection {conn_id!r} does not exist")
    fields = ConnectionFields(conn_id, conn.host, conn.port, conn.login, conn.password, extra)
    if fields.password:
        mask_secret(fields.password)
    return fields


def secret_options_for(spec: JobSpec) -> SecretOptions:
    """Options the spec names by connection (``connection``, ``secret_options``), masked in Airflow's logs."""
    resolved = SecretOptions()
    for side in ("source", "sink"):
        endpoint = getattr(spec, side)
        if endpoint is None:
            continue
        if endpoint.connection:
            _add_connection(resolved, side, endpoint.connection, set(endpoint.options))
        for key, conn_id in endpoint.secret_options.items():
            field = f"{side}.secret_options.{key}"
            conn = connection_fields(field, conn_id)
            if not conn.password:
                raise DeployError(f"{field}: Airflow connection {conn_id!r} has no password to use as the value")
            resolved.add(side, key, conn.password, secret=True)
    for value in resolved.secret_values:
        mask_secret(value)
    return resolved


def _add_connection(resolved: SecretOptions, side: str, conn_id: str, own_options: set[str]) -> None:
    """The Kafka options of the connection a side names, refusing one the spec also sets itself."""
    conn = connection_fields(f"{side}.connection", conn_id)
    try:
        options, secret = kafka_options(conn)
    except ValueError as exc:
        raise DeployError(f"{side}.connection: {exc}") from exc
    clash = sorted(set(options) & own_options)
    if clash:
        raise DeployError(f"{side}.options.{clash[0]}: also set by connection {conn_id!r}; set it in one place")
    for key, value in options.items():
        resolved.add(side, key, value, secret=key in secret)
    if conn.password:
        resolved.secret_values.add(conn.password)
