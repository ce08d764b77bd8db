"""Heal a failed query without a new driver: when the query failed transiently (its source or sink briefly
unreachable: insight/transient.py) and the job's restart policy allows one more restart within its window
(the supervisor's restarts and the driver's own counted together), the driver waits the policy's backoff and
starts the query again from the same writer, in its own SparkSession: about a second, no new JVM. Each such
restart is an incident and counts in the status's ``query_restarts``. Anything else ends the driver as before,
and the supervisor acts on it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from airflow_async_stream.insight.transient import transient_cause
from airflow_async_stream.spec.restart import Restart
from airflow_async_stream.state.incidents import Incident, Kind, record_incident
from airflow_async_stream.state.records import now
from airflow_async_stream.supervise.record import recorded_supervision

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

    from airflow_async_stream.spec.model import JobSpec
    from airflow_async_stream.spec.secret_options import Redactor
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.requests import StopRequest, SwitchRequest

__all__ = ["govern_query", "requery"]

_log = logging.getLogger(__name__)


class Requerying(Protocol):
    """What of the driver's governor (governor.py) a restart of its query reads and tells."""

    spec: JobSpec | None
    control: ControlArea
    deployment_id: str
    redact: Redactor

    @property
    def query_restarts(self) -> list[float]: ...
    def stop_request(self) -> StopRequest | None: ...
    def watch(self, query: StreamingQuery, switchable: bool = False) -> SwitchRequest | None: ...
    def requeried(self, query: StreamingQuery, at: float, keep: int) -> None: ...


_POLL_S = 0.1


def govern_query(
    governor: Requerying,
    query: StreamingQuery,
    writer: Any,
    switch: Callable[[StreamingQuery, SwitchRequest], StreamingQuery] | None,
) -> None:
    """Govern ``query`` until it ends for good: switched in place on request (``switch``), started again in
    this driver after a transient failure the policy allows. Its failure is raised when it ends the driver."""
    while True:
        failure: Exception | None = None
        try:
            while (request := governor.watch(query, switchable=switch is not None)) is not None and switch:
                query = switch(query, request)
        except Exception as exc:  # Spark raises the query's failure from awaitTermination
            failure = exc
        again = requery(governor, query, writer)
        if again is None:
            if failure is not None:
                raise failure
            return
        query = again


def requery(governor: Requerying, query: StreamingQuery, writer: Any) -> StreamingQuery | None:
    """A new query after ``query`` failed transiently and the policy allows it; None: the driver ends."""
    error = query.exception()
    cause = transient_cause(str(error)) if error is not None else None
    if cause is None or governor.stop_request() is not None:
        return None
    policy = governor.spec.restart_settings if governor.spec else Restart()
    at = now()
    recent = recorded_supervision(governor.control).counted(policy.within_s, governor.query_restarts, at)
    if policy.policy == "never" or recent >= policy.max_restarts:
        _log.warning(
            "query failed transiently (%s), but restart.%s: the driver ends",
            cause,
            "policy is never" if policy.policy == "never" else f"max_restarts ({policy.max_restarts}) is reached",
        )
        return None
    wait_s = policy.backoff_s(recent)
    record_incident(
        governor.control,
        Incident(
            kind=Kind.QUERY_RESTART,
            deployment_id=governor.deployment_id,
            since=at,
            error=governor.redact(_line_of(str(error), cause)),
            diagnosis=f"transient: {cause}",
            action=f"restarted its query in the driver after {wait_s:.1f} s",
        ),
    )
    _log.warning("query failed transiently (%s): restarting it in this driver in %.1f s", cause, wait_s)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        if governor.stop_request() is not None:
            return None  # a stop meanwhile: the failed query's end is the driver's
        time.sleep(_POLL_S)
    again: StreamingQuery = writer.start()
    governor.requeried(again, at, policy.max_restarts)
    _log.info("deployment %s: query %s restarted (run %s)", governor.deployment_id, again.id, again.runId)
    return again


def _line_of(error: str, cause: str) -> str:
    """The error's line that says ``cause`` (its exception's own line first, not the code that raised it)."""
    lines = [line.strip() for line in error.splitlines() if cause in line]
    return next((line for line in lines if f"{cause}:" in line), lines[0] if lines else error)
