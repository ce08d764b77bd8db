"""Switch a governed query to a new configuration in place: same driver, same SparkSession, same checkpoint.

    switch-request.json ─▶ refuse what needs a new driver (nothing stopped)
        ─▶ rehearse: fail what Spark would reject at the start (nothing stopped)
        ─▶ stop between micro-batches ─▶ gated? inspector on the stopped checkpoint
        ─▶ safe or not gated: the requested spec │ unsafe: the requested spec, async on at interval 0
        ─▶ new query from the same writer ─▶ first batch: the pause, measured from the progress log

Every phase is written to ``switch.json`` before the driver acts on it, and the request is removed
once it is settled, so a request is applied once: a driver that dies mid-switch leaves it to the next
deployment, which refuses it (``abandoned``). Only one query runs on the checkpoint at any time, and
nothing in the checkpoint is written here (the inspector reads it).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any, Protocol

from airflow_async_stream.decision.in_place import configuration_of, in_place_refusals, runtime_conf_changes
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.runtime.pause import pause_at
from airflow_async_stream.runtime.query import stop_between_batches
from airflow_async_stream.runtime.switch_request import (
    abandon_stale_request,
    gated_target,
    not_applied,
    not_rehearsable,
)
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.checkpoint import resume_point
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import now
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome, SwitchPhase, SwitchRequest

if TYPE_CHECKING:
    from pyspark.sql.streaming.query import StreamingQuery

    from airflow_async_stream.spec.secret_options import Redactor

__all__ = ["Switching", "InPlaceSwitch", "abandon_stale_request"]

_log = logging.getLogger(__name__)


class Switching(Protocol):
    """What a switch needs of the governor that owns the query (runtime/governor.py)."""

    control: ControlArea
    deployment_id: str
    redact: Redactor
    spec: JobSpec | None
    configuration: dict[str, Any] | None
    last_event: dict[str, Any] | None

    def flush_progress(self, query: StreamingQuery) -> None: ...

    def switched(
        self,
        query: StreamingQuery,
        spec: JobSpec | None,
        last_before: dict[str, Any] | None,
        record: SwitchAccount | None,
    ) -> None: ...


class InPlaceSwitch:
    """One request applied to the governor's query (``apply`` returns the query that runs afterwards)."""

    def __init__(self, governor: Switching, spark: Any, writer: Any, df: Any) -> None:
        self.governor = governor
        self.control = governor.control
        self.spark = spark
        self.writer = writer
        self.df = df

    def _stopped(self, query: StreamingQuery) -> None:
        """Its progress flushed once its old query stopped; a test's fault may land here, before the new query
        starts (runtime/pause.py)."""
        self.governor.flush_progress(query)
        pause_at("switch-stopped")

    def apply(self, query: StreamingQuery, request: SwitchRequest) -> StreamingQuery:
        current = self.governor.spec
        assert current is not None
        record = SwitchAccount(
            request_id=request.request_id,
            deployment_id=request.deployment_id,
            phase=SwitchPhase.STOPPING,
            before=configuration_of(current),
            requested_at=request.requested_at,
        )
        refused = not_applied(self.control, request)
        if refused:
            return self._settle(query, record, *refused)
        if request.rehearse:
            return self._rehearsal(query, record, current, request)
        try:
            new = self._judge(current, request)
        except SpecError as exc:
            return self._settle(query, record, SwitchOutcome.REFUSED, str(exc))
        try:
            self._rehearse(current, new)
        except Exception as exc:  # Spark rejects it: the query never stopped, so nothing ran twice
            _log.warning(
                "the new configuration would not start (%s): the query runs on as it was",
                self.governor.redact(str(exc)),
            )
            return self._settle(query, record.but(after=configuration_of(current)), SwitchOutcome.FAILED, str(exc))
        record, last_before = self._stop(query, record, request, current)
        target, outcome, gate = gated_target(new, request)
        record = record.but(gate=gate)
        try:
            started = self._start(target, current)
        except Exception as exc:  # the job keeps running as it was; the caller learns why
            _log.warning("the new query did not start (%s): starting the previous configuration again", exc)
            started = self._start(current, target)
            return self._settle(started, record.but(after=configuration_of(current)), SwitchOutcome.FAILED, str(exc))
        record = record.but(
            phase=SwitchPhase.STARTED,
            outcome=outcome,
            after=configuration_of(target),
            started_at=now(),
            query_run_id=str(started.runId),  # read once (a py4j call beside the first batch): from here, the record's
            reason=None if outcome == SwitchOutcome.SWITCHED else gate,
        )
        self.control.remove(ControlArea.SWITCH_REQUEST)  # before any account: its asker may ask again at once
        self._write(record)  # before the governor may settle it at the first batch
        self._publish(target, record.query_run_id)
        self.governor.switched(started, target, last_before, record)
        _log.info("switched in place to %s: run %s", record.after, record.query_run_id)
        return started

    def _stop(
        self, query: StreamingQuery, record: SwitchAccount, request: SwitchRequest, current: JobSpec
    ) -> tuple[SwitchAccount, dict[str, Any] | None]:
        """Stop the query between micro-batches; the account so far, and the last batch's event before it."""
        self._write(record)
        _log.info("switching in place (request %s): stopping between micro-batches", request.request_id)
        forced = stop_between_batches(query, request.graceful_timeout_s)
        self._stopped(query)
        last_before = self.governor.last_event
        record = record.but(
            phase=SwitchPhase.STOPPED,
            stopped_at=now(),
            forced_stop=forced,
            last_batch_before=last_before["batch_id"] if last_before else None,
            committed_before=resume_point(current.checkpoint),
        )
        self._write(record)
        return record, last_before

    def _judge(self, current: JobSpec, request: SwitchRequest) -> JobSpec:
        """The requested spec, or SpecError when it is invalid or needs a new driver (nothing stopped yet)."""
        new = parse_spec(request.spec, source="the switch request")
        problems = in_place_refusals(current, new, request.require_sync_safe)
        to_set, to_unset = runtime_conf_changes(current, new)
        for key in [*to_set, *to_unset]:
            if not self.spark.conf.isModifiable(key):
                problems.append((f"spark_conf.{key}", "Spark sets it only when the session starts: redeploy"))
        if not problems and new.async_progress.enabled and self.df is not None:
            from airflow_async_stream.runtime.query import refuse_stateful_with_async

            refuse_stateful_with_async(self.df, new)
        if problems:
            raise SpecError(problems, "the switch request")
        return new

    def _rehearse(self, current: JobSpec, new: JobSpec) -> Any:
        """Raise what Spark would raise at the new query's start for its settings and trigger, before the
        running query is stopped: each runtime setting is set in a session of its own (Spark checks the
        value), and the trigger is built on a writer of its own (Spark parses the interval). That session."""
        trial = self.spark.newSession()
        to_set, _ = runtime_conf_changes(current, new)
        for key, value in to_set.items():
            if self.spark.conf.isModifiable(key):  # others need a new driver, which sets them at its start
                trial.conf.set(key, value)
        trigger = new.trigger.spark_kwargs()
        if trigger:
            trial.readStream.format("rate").load().writeStream.trigger(**trigger)
        return trial

    def _rehearsal(
        self, query: StreamingQuery, record: SwitchAccount, current: JobSpec, request: SwitchRequest
    ) -> StreamingQuery:
        """Build the requested query in a session of its own and analyze it; start and stop nothing."""
        from airflow_async_stream.runtime.query import build_dataframe, refuse_stateful_with_async

        try:
            new = parse_spec(request.spec, source="the rehearsal request")
        except SpecError as exc:
            return self._settle(query, record, SwitchOutcome.REFUSED, str(exc))
        why_not = not_rehearsable(current, new, has_query=self.df is not None)
        if why_not:
            return self._settle(query, record, SwitchOutcome.REFUSED, why_not)
        try:
            df = build_dataframe(self._rehearse(current, new), new)
            refuse_stateful_with_async(df, new)
        except Exception as exc:  # Spark rejects it: said before anything is stopped for it
            _log.warning(
                "rehearsal of request %s: Spark rejects the new query: %s",
                request.request_id,
                self.governor.redact(str(exc)),
            )
            return self._settle(query, record, SwitchOutcome.FAILED, str(exc))
        return self._settle(query, record, SwitchOutcome.REHEARSED, "Spark builds and analyzes the new query")

    def _start(self, spec: JobSpec, previous: JobSpec) -> StreamingQuery:
        """Set the session's runtime settings and the writer's options from ``spec``, and start the query."""
        from airflow_async_stream.runtime.query import apply_spec_to_writer

        to_set, to_unset = runtime_conf_changes(previous, spec)
        for key, value in to_set.items():
            self.spark.conf.set(key, value)
        for key in to_unset:
            self.spark.conf.unset(key)
        self.governor.configuration = configuration_of(spec)
        writer = apply_spec_to_writer(self.writer, spec, application_mode=True)
        return writer.start()

    def _settle(
        self, query: StreamingQuery, record: SwitchAccount, outcome: SwitchOutcome, reason: str
    ) -> StreamingQuery:
        _log.info("switch request %s %s: %s", record.request_id, outcome, self.governor.redact(reason))
        self.control.remove(ControlArea.SWITCH_REQUEST)  # first: an answered asker may write its next request
        self._write(record.but(phase=SwitchPhase.DONE, outcome=outcome, reason=reason, started_at=now()))
        if outcome == SwitchOutcome.FAILED and record.stopped_at is not None:  # the previous query started again
            self.governor.switched(query, self.governor.spec, None, None)
        return query

    def _publish(self, spec: JobSpec, run_id: str | None) -> None:
        """spec.json and deployment.json describe what runs now (a rollout plans from them)."""
        self.control.write_bytes(ControlArea.SPEC, spec.to_json_bytes())
        deployment = self.control.read_deployment()
        if deployment and deployment.deployment_id == self.governor.deployment_id:
            configuration = configuration_of(spec)
            self.control.write_deployment(
                deployment.but(
                    async_progress=configuration["async_progress"],
                    trigger=configuration["trigger"],
                    query_run_id=run_id,
                )
            )

    def _write(self, record: SwitchAccount) -> None:
        self.control.write_switch_account(record, self.governor.redact.json)
