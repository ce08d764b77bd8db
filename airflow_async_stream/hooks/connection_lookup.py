"""Look up an Airflow connection, telling "it does not exist" apart from "it could not be read".

Airflow answers both with ``AirflowNotFoundException``: a secrets backend that fails (a vault down, a
malformed ``AIRFLOW_CONN_*`` URI, an API error) is skipped and logged at debug level only. A deploy
must not take that for "no connection" and run the job somewhere else, so on a "not found" every
configured backend is asked again, and any failure among them is an error naming the connection.
"""

from __future__ import annotations

import re
from typing import Any

from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from airflow_async_stream.exceptions import ConnectionLookupError

__all__ = ["find_connection"]

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
