"""The supervisor's task: for each job the watcher's events name (or, run by hand, every job of the fleet), the
doctor's diagnosis, then the policy (supervise/act.py), under the job's hold. A restart's backoff is waited
out in the task when short, else deferred to the triggerer."""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import TYPE_CHECKING, Any

from airflow.providers.standard.triggers.temporal import DateTimeTrigger
from airflow.sdk import BaseOperator
from airflow.sdk.exceptions import AirflowSkipException

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.rollout.desired import load_desired
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import left_out
from airflow_async_stream.state.sources import find_jobs
from airflow_async_stream.supervise.act import SuperviseSettings, supervise_job

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["RecoveredJobsOperator", "SuperviseJobsOperator"]

#: A backoff this short is waited out in the task; a longer one defers it to the triggerer.
SLEEP_AT_MOST_S = 30.0


def _evented(context: Context) -> list[str]:
    """The control areas the run's triggering events name, each once, in the order they came."""
    areas: list[str] = []
    for events in (context.get("triggering_asset_events") or {}).values():
        for event in events:
            payload = (getattr(event, "extra", None) or {}).get("payload") or {}
            area = payload.get("control_area") if isinstance(payload, dict) else None
            if isinstance(area, str) and area not in areas:
                areas.append(area)
    return areas


class SuperviseJobsOperator(BaseOperator):
    """Supervise the jobs a run's health events name (all of the fleet's on a run without events).

    :param fleet_indexes: the fleet indexes whose jobs a run without events supervises.
    :param checkpoint_folders: likewise, checkpoint folders.
    :param conn_id: the Airflow Spark connection restarts deploy with.
    :param startup_timeout_s: how long a restarted driver may take to start.
    :param wait_timeout_s: how long a restart may take to commit its first batches.

    Returns each job's outcome (``supervise.act.Outcome``); fails, after every job was looked at, with one
    line per job that needs a person (said once per incident: a later run stays silent, a retry of this one
    says it again), and naming the jobs whose records could not be read. Recoveries of jobs it alerted about
    are said once in XCom ``recovered``.
    """

    ui_color = "#eaf7ea"

    def __init__(
        self,
        *,
        fleet_indexes: list[str] | None = None,
        checkpoint_folders: list[str] | None = None,
        desired_folders: list[str] | None = None,
        conn_id: str = StreamingJobHook.default_conn_name,
        startup_timeout_s: float = 300.0,
        wait_timeout_s: float = 300.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.fleet_indexes = list(fleet_indexes or [])
        self.checkpoint_folders = list(checkpoint_folders or [])
        self.desired_folders = list(desired_folders or [])
        self.conn_id = conn_id
        self.startup_timeout_s = startup_timeout_s
        self.wait_timeout_s = wait_timeout_s

    def execute(self, context: Context) -> list[dict[str, Any]]:
        fleet = [
            f.control_area
            for f in find_jobs(self.fleet_indexes, self.checkpoint_folders)
            if not f.error and not f.retired
        ]
        evented = _evented(context)
        for stranger in sorted(set(evented) - set(fleet)):  # an asset event anyone with API access could post
            self.log.warning("%s: not a job of this supervisor's fleet: left alone", stranger)
        areas = [area for area in evented if area in fleet]
        if not evented:
            areas = fleet
            self.log.info("No health event: looking at every job of the fleet (%d)", len(areas))
        return self._supervise(areas, context, [])

    def resume(
        self,
        context: Context,
        event: Any = None,
        areas: list[str] | None = None,
        done: list[dict[str, Any]] | None = None,
    ) -> list[dict[str, Any]]:
        return self._supervise(list(areas or []), context, list(done or []))

    def _supervise(self, areas: list[str], context: Context, done: list[dict[str, Any]]) -> list[dict[str, Any]]:
        settings = SuperviseSettings(
            DeploySettings(
                conn_id=self.conn_id,
                startup_timeout_s=self.startup_timeout_s,
                requested_by=f"supervisor {self.dag_id}",
                launcher=partial(launcher_for, self.conn_id),
            ),
            wait_timeout_s=self.wait_timeout_s,
            desired=self._desired(),
        )
        holder = Holder.for_task(context, "supervisor")
        run = f"{self.dag_id}/{context.get('run_id') or 'a run outside Airflow'}"
        while True:
            waiting: dict[str, float] = {}
            for area in areas:
                try:
                    outcome = supervise_job(ControlArea(area), holder, settings, self.log, run).to_json()
                except (AsyncStreamError, OSError, ValueError) as exc:
                    outcome = left_out(area, exc, "supervisor")
                    self.log.error("%s: not supervised: %s", area, outcome["reason"])
                if outcome["act"] == "wait":
                    waiting[area] = float(outcome["wait_s"])
                else:
                    done.append(outcome)
            if not waiting:
                break
            soonest = min(waiting.values())
            areas = list(waiting)
            if soonest > SLEEP_AT_MOST_S:
                self.log.info("Restarts due in %.0f s: deferred", soonest)
                moment = datetime.now(UTC) + timedelta(seconds=soonest)
                self.defer(trigger=DateTimeTrigger(moment), method_name="resume", kwargs={"areas": areas, "done": done})
            self.log.info("Restarts due in %.1f s: waiting", soonest)
            time.sleep(soonest)
        return self._said(context, done)

    def _desired(self) -> dict[str, JobSpec]:
        """The jobs of the desired folders, by name (what a restart of one runs); a folder that cannot be read
        is said, and its jobs restart from the specs this host kept (state/issued.py)."""
        jobs: dict[str, JobSpec] = {}
        for folder in self.desired_folders:
            try:
                jobs |= {name: job.spec for name, job in load_desired(folder).items()}
            except (AsyncStreamError, OSError) as exc:
                self.log.error(
                    "desired folder %s cannot be read (%s): its jobs restart from the specs kept", folder, exc
                )
        return jobs

    def _said(self, context: Context, done: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Say the recoveries (XCom ``recovered``), then fail with one line per job that needs a person."""
        recovered = [o["recovered"] for o in done if o.get("recovered")]
        for line in recovered:
            self.log.info("%s", line)
        if (ti := context.get("ti")) is not None:
            ti.xcom_push(key="recovered", value=recovered)
        lines = [o["said"] for o in done if o.get("said")]
        failed = [o["control_url"] for o in done if o["act"] == "error"]
        if failed:
            lines.append(f"not supervised as the policy says: {', '.join(failed)} (see the log above)")
        if lines:
            raise AsyncStreamError("\n".join(lines))
        return done


class RecoveredJobsOperator(BaseOperator):
    """Say the recoveries the supervisor's run found (its XCom ``recovered``): succeeds with one line per job, so
    a notifier in its ``on_success_callback`` says each once; skipped when there is none. Runs whether the
    supervisor's task failed (an alert for another job) or not.

    :param supervise_task_id: the supervisor's task in the same DAG.
    """

    ui_color = "#eaf7ea"

    def __init__(self, *, supervise_task_id: str = "supervise", **kwargs: Any) -> None:
        kwargs.setdefault("trigger_rule", "all_done")
        super().__init__(**kwargs)
        self.supervise_task_id = supervise_task_id

    def execute(self, context: Context) -> list[str]:
        lines = context["ti"].xcom_pull(task_ids=self.supervise_task_id, key="recovered") or []
        if not lines:
            raise AirflowSkipException("no job recovered from an alert in this run")
        for line in lines:
            self.log.info("%s", line)
        return list(lines)
