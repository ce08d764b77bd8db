"""Deploy one job (make room on its checkpoint, submit detached, confirm its query runs), or stop it.

Shared by the operators, the migration's steps and rollouts. The caller's hold on the job is taken here
(renewed when the caller already holds it).
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from airflow_async_stream.decision.needs import Decision
from airflow_async_stream.driver.deferred import DeferredLauncher
from airflow_async_stream.driver.exits import wait_for_driver_exit
from airflow_async_stream.driver.launcher import Launcher, Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.start import refuse_nested, refuse_unsafe_sync_start, wait_until_running
from airflow_async_stream.driver.stop import StopOutcome, stop_driver
from airflow_async_stream.exceptions import (
    DeployError,
    DriverFailedError,
    DriverStartTimeoutError,
    HoldRevokedError,
    JobAlreadyRunningError,
    StopTimeoutError,
)
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.lineage.link import LineageLink
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import issued, registry
from airflow_async_stream.state.checkpoint import resume_point
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import DagRunLookup, Grant, Holder, held, revoke
from airflow_async_stream.state.liveness import liveness_of
from airflow_async_stream.state.records import NOT_LAUNCHED, SUBMITTED, Deployment, State, hold_ttl_s, now
from airflow_async_stream.state.stopped import record_stop
from airflow_async_stream.waits import Log

__all__ = ["DeploySettings", "deploy_job", "stop_job"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class DeploySettings:
    """How to deploy: target connection (or the launcher built from it), takeover of a live driver, and the
    time limits of each wait."""

    conn_id: str = "spark_default"
    redeploy: bool = False
    startup_timeout_s: float = 300.0
    stop_graceful_timeout_s: float = 60.0
    stop_kill_after_s: float = 120.0
    requested_by: str = "airflow-async-stream"
    airflow: dict[str, Any] = field(default_factory=dict)  # dag_id, run_id, task_id, try_number
    #: Deploy a synchronous spec even where the inspector says Spark cannot restart it (logged; else refused).
    allow_unsafe_sync_restart: bool = False
    #: Where drivers run, or a function building it when a deploy or stop needs it (hooks/launchers.py).
    launcher: Launcher | Callable[[], Launcher] | None = field(default=None, compare=False, repr=False)
    #: The deploy task's OpenLineage link: Spark conf for the listener, settings of the driver's RUNNING events.
    lineage: LineageLink = field(default_factory=LineageLink, compare=False, repr=False)

    def stopper(self) -> Launcher:
        """The launcher a stop uses, built only if the stop needs it; without one, this host's (which kills
        only a driver process it provably launched, and names the connection for a driver on a cluster)."""
        if self.launcher is None:
            return LocalLauncher()
        return DeferredLauncher(self.launcher) if callable(self.launcher) else self.launcher

    def target(self) -> Launcher:
        """The launcher; without one, an error (never a silent run somewhere the connection did not name)."""
        if self.launcher is None:
            raise DeployError(
                f"no launcher for connection {self.conn_id!r}: in Airflow, hooks.launchers.launcher_for(conn_id) "
                "builds it; without Airflow, LocalLauncher() runs the driver on this host"
            )
        return self.launcher() if callable(self.launcher) else self.launcher

    @property
    def hold_ttl_s(self) -> float:
        """A hold long enough for one deploy (which may stop the live driver first)."""
        return hold_ttl_s(deploys=1, startup_timeout_s=self.startup_timeout_s, stop_kill_after_s=self.stop_kill_after_s)


def stop_job(
    control: ControlArea,
    holder: Holder,
    settings: DeploySettings,
    reason: str,
    dag_run_lookup: DagRunLookup | None = None,
    log: Log = _log,
    force: bool = False,
    on_purpose: tuple[str, str] | None = None,
) -> StopOutcome:
    """Stop the job's live driver between micro-batches, holding the job meanwhile.

    ``force`` first ends another holder's hold (its next step then fails without changing the job);
    ``on_purpose`` (``(kind, by)``, state/stopped.py) is recorded first: nothing starts the job again.
    """
    if force:
        revoked = revoke(control, holder, f"forced {reason}")
        if revoked:
            log.warning("Forced: ended the hold of %s (%s)", revoked.holder, revoked.purpose)
    ttl = hold_ttl_s(stops=1, stop_kill_after_s=settings.stop_kill_after_s)
    with held(control, holder, ttl, dag_run_lookup) as grant:
        if on_purpose:
            record_stop(control, grant, *on_purpose, reason)
        return stop_driver(
            control,
            reason,
            graceful_timeout_s=settings.stop_graceful_timeout_s,
            kill_after_s=settings.stop_kill_after_s,
            log=log,
            launcher=settings.stopper(),
        )


def deploy_job(
    spec: JobSpec,
    holder: Holder,
    settings: DeploySettings,
    dag_run_lookup: DagRunLookup | None = None,
    log: Log = _log,
    decision: Decision | None = None,
) -> Deployment:
    """Submit ``spec`` and return its deployment record once the query reports its first micro-batch.
    ``decision``: what ``spec`` needs, decided by the caller under the same holder's hold (the deploy guard acts
    on it instead of deciding again)."""
    control = ControlArea.for_checkpoint(spec.checkpoint)
    launcher = settings.target()
    log.info("Target %s: %s", launcher.master, launcher.check(spec))  # refused here, before any Spark work
    refuse_nested(spec.checkpoint)
    secrets = launcher.secrets(spec)  # a missing connection fails here too
    deployment_id = f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}-{uuid.uuid4().hex[:8]}"
    spark = launcher.spark()
    submission = Submission.for_spec(spec, control.url, deployment_id, secrets, launcher.extra, spark, settings.lineage)
    control.ensure()
    with held(control, holder, settings.hold_ttl_s, dag_run_lookup) as grant:
        refuse_unsafe_sync_start(spec, settings.allow_unsafe_sync_restart, log, decision)
        _make_room(control, spec, launcher, settings, log)
        record = _record(spec, launcher.master, control, submission, settings).but(hold_token=grant.token)
        issued.keep(spec, deployment_id, "deploy")  # before a driver exists
        record = _submit(control, launcher, submission, record, log, grant)
        try:
            return _confirm(spec, control, launcher, record, settings, log, grant)
        except DriverFailedError:
            _record_failure(control, spec.checkpoint, log)
            raise


def _record_failure(control: ControlArea, checkpoint: str, log: Log) -> None:
    """The deploy is the actor that saw its driver fail: it records the failed start, once, with the doctor's
    diagnosis (a reader only shows it)."""
    try:
        check_up(control, checkpoint)
    except Exception as exc:  # noqa: BLE001 - the deploy's own error is the one to raise
        log.warning("%s: could not record the failed start: %s", control.url, exc)


def _submit(
    control: ControlArea,
    launcher: Launcher,
    submission: Submission,
    record: Deployment,
    log: Log,
    grant: Grant,
) -> Deployment:
    """Write the spec and deployment record, then launch the driver detached.

    Fenced: a hold ended meanwhile (a forced stop while the old driver was stopped) fails here, changing
    nothing; one ended after the record is written is seen by the driver itself, which then does not start.
    """
    with grant.guarded():  # no revocation between the check and these writes
        control.write_bytes(ControlArea.SPEC, submission.spec_json)
        control.write_deployment(record)
        control.remove(ControlArea.STOP_REQUEST)
    try:
        grant.check()  # once more, right before the launch
    except HoldRevokedError:
        control.write_deployment(record.but(state=NOT_LAUNCHED))  # so a stop does not wait for it
        raise
    driver = launcher.launch(submission, control)
    record = record.but(driver=driver)
    control.write_deployment(record)
    registry.record(submission.job, str(record.checkpoint), control.url, record.deployment_id)
    log.info("Submitted %s as deployment %s (driver %s)", record.job, record.deployment_id, driver.to_json())
    return record


def _confirm(
    spec: JobSpec,
    control: ControlArea,
    launcher: Launcher,
    record: Deployment,
    settings: DeploySettings,
    log: Log,
    grant: Grant,
) -> Deployment:
    """Wait for the query's first micro-batch; a driver that does not start in time is stopped. A driver
    that did not start because the hold was ended while it launched fails the deploy with HoldRevokedError."""
    driver = record.driver
    try:
        status = wait_until_running(
            control, record.deployment_id, driver, settings.startup_timeout_s, log=log, launcher=launcher
        )
    except DriverFailedError:
        grant.check()
        raise
    except DriverStartTimeoutError:
        try:
            stop_driver(control, "startup timed out", graceful_timeout_s=5, kill_after_s=30, log=log, launcher=launcher)
        except StopTimeoutError as exc:  # the timeout is the error to report; the stop request stands
            log.warning("The driver that did not start in time was not stopped: %s", exc)
        raise
    record = record.but(
        state=State.RUNNING,
        first_batch_id=status.first_batch_id,
        query_id=status.query_id,
        query_run_id=status.query_run_id,
        confirmed_at=now(),
        driver=driver.but(driver_pid=status.pid) if driver else None,
    )
    control.write_deployment(record)
    log.info(
        "Job %s runs: query %s, first batch %s, async progress %s",
        spec.name,
        record.query_id,
        record.first_batch_id,
        record.async_progress,
    )
    return record


def _make_room(control: ControlArea, spec: JobSpec, launcher: Launcher, settings: DeploySettings, log: Log) -> None:
    """Never two drivers on one checkpoint: refuse, or on redeploy stop the live one first."""
    status, judged = liveness_of(control)  # its host's exit record counts too, from any host
    if not judged.live:
        # Its status is final (or stale), but its driver process (of any host) may still be on its way out.
        exiting = wait_for_driver_exit(control, settings.stop_kill_after_s, log)
        if exiting:
            raise JobAlreadyRunningError(
                f"job {spec.name!r}: the previous driver's query ended ({judged.reason}), but {exiting.describe()} "
                f"{settings.stop_kill_after_s:.0f} s later; not deploying beside it{exiting.remedy(spec.name)}"
            )
        return
    assert status is not None
    holder = f"deployment {status.deployment_id} (pid {status.pid} on {status.host})"
    if not settings.redeploy:
        raise JobAlreadyRunningError(
            f"job {spec.name!r}: checkpoint {spec.checkpoint} already has a live driver, {holder}; "
            f"{judged.reason}. Stop it first, or deploy with redeploy=True to stop it and take over."
        )
    log.info("Redeploy: stopping %s first", holder)
    outcome = stop_driver(
        control,
        f"redeploy by {settings.requested_by}",
        graceful_timeout_s=settings.stop_graceful_timeout_s,
        kill_after_s=settings.stop_kill_after_s,
        log=log,
        launcher=launcher,
    )
    if outcome.exiting:
        raise JobAlreadyRunningError(
            f"job {spec.name!r}: the previous driver stopped its query, but {outcome.exiting.describe()} "
            f"{settings.stop_kill_after_s:.0f} s after the stop request; not deploying beside it"
            f"{outcome.exiting.remedy(spec.name)}"
        )
    log.info("Previous deployment ended: %s", outcome.status.state if outcome.status else None)


def _record(
    spec: JobSpec, master: str, control: ControlArea, submission: Submission, settings: DeploySettings
) -> Deployment:
    return Deployment(
        job=spec.name,
        deployment_id=submission.deployment_id,
        checkpoint=spec.checkpoint,
        control_area=control.url,
        master=master,
        async_progress=spec.async_progress.model_dump(exclude={"auto"}),  # what the query runs with
        trigger=spec.trigger.model_dump(exclude_none=True),
        start_batch=resume_point(spec.checkpoint),
        deployed_at=now(),
        state=SUBMITTED,
        airflow={k: settings.airflow.get(k) for k in ("dag_id", "run_id", "task_id", "try_number")},
        secret_options=submission.secret_names,  # which options came from connections; never their values
    )
