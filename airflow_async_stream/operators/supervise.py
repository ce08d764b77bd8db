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

from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.rollout.sources import find_jobs
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.supervise.act import SuperviseSettings, supervise_job

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["SuperviseJobsOperator"]

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

    Returns each job's outcome (``supervise.act.Outcome``); fails, after every job was looked at, naming
    the jobs whose records could not be read or whose restart could not be made.
    """

    ui_color = "#eaf7ea"

    def __init__(
        self,
        *,
        fleet_indexes: list[str] | None = None,
        checkpoint_folders: list[str] | None = None,
        conn_id: str = StreamingJobHook.default_conn_name,
        startup_timeout_s: float = 300.0,
        wait_timeout_s: float = 300.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.fleet_indexes = list(fleet_indexes or [])
        self.checkpoint_folders = list(checkpoint_folders or [])
        self.conn_id = conn_id
        self.startup_timeout_s = startup_timeout_s
        self.wait_timeout_s = wait_timeout_s

    def execute(self, context: Context) -> list[dict[str, Any]]:
        fleet = [f.control_area for f in find_jobs(self.fleet_indexes, self.checkpoint_folders)
                 if not f.error and not f.retired]  # fmt: skip
        evented = _evented(context)
        for stranger in sorted(set(evented) - set(fleet)):  # an asset event anyone with API access could post
            self.log.warning("%s: not a job of this supervisor's fleet: left alone", stranger)
        areas = [area for area in evented if area in fleet]
        if not evented:
            areas = fleet
            self.log.info("No health event: looking at every job of the fleet (%d)", len(areas))
        return self._supervise(areas, context, [])

    def resume(self, context: Context, event: Any = None, areas: list[str] | None = None,
               done: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:  # fmt: skip
        return self._supervise(list(areas or []), context, list(done or []))

    def _supervise(self, areas: list[str], context: Context, done: list[dict[str, Any]]) -> list[dict[str, Any]]:
        settings = SuperviseSettings(
            DeploySettings(conn_id=self.conn_id, startup_timeout_s=self.startup_timeout_s,
                           requested_by=f"supervisor {self.dag_id}", launcher=partial(launcher_for, self.conn_id)),
            wait_timeout_s=self.wait_timeout_s,
        )  # fmt: skip
        holder = Holder.for_task(context, "supervisor")
        while True:
            waiting: dict[str, float] = {}
            for area in areas:
                try:
                    outcome = supervise_job(ControlArea(area), holder, settings, self.log).to_json()
                except AsyncStreamError as exc:
                    self.log.error("%s: not supervised: %s", area, exc)
                    outcome = {"control_url": area, "act": "error", "reason": str(exc)}
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
        failed = [o["control_url"] for o in done if o["act"] in ("error", "restart_failed")]
        if failed:
            raise AsyncStreamError(f"not supervised as the policy says: {', '.join(failed)} (see the log above)")
        return done
