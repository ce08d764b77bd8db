"""The tuner's task: one tuning step for each job of the fleet whose spec delegates an async field (``auto``),
under each job's hold (autotune/tune.py); the measuring happens between runs, so a run takes seconds unless it
switches or migrates a job."""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.autotune.tune import TuneSettings, tune_job
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.incidents import left_out
from airflow_async_stream.state.sources import find_jobs

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["AutotuneJobsOperator"]


class AutotuneJobsOperator(BaseOperator):
    """Take one tuning step for every job of the fleet (a job whose spec pins its async fields is skipped).

    :param fleet_indexes: the fleet indexes whose jobs are tuned.
    :param checkpoint_folders: likewise, checkpoint folders.
    :param conn_id: the Airflow Spark connection a migration that cannot switch in place deploys with.
    :param wait_timeout_s: how long a migration's waits for committed batches may take.

    Returns each job's step (``autotune.tune.Tuned``); fails, after every job, naming the jobs whose change
    failed or whose records could not be read.
    """

    ui_color = "#eef3fb"

    def __init__(
        self,
        *,
        fleet_indexes: list[str] | None = None,
        checkpoint_folders: list[str] | None = None,
        conn_id: str = StreamingJobHook.default_conn_name,
        wait_timeout_s: float = 600.0,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.fleet_indexes = list(fleet_indexes or [])
        self.checkpoint_folders = list(checkpoint_folders or [])
        self.conn_id = conn_id
        self.wait_timeout_s = wait_timeout_s

    def execute(self, context: Context) -> list[dict[str, Any]]:
        deploy = DeploySettings(
            conn_id=self.conn_id, requested_by=f"autotune {self.dag_id}", launcher=partial(launcher_for, self.conn_id)
        )
        settings = TuneSettings(deploy=deploy, wait_timeout_s=self.wait_timeout_s)
        holder = Holder.for_task(context, "autotune")
        done, failed = [], []
        for found in find_jobs(self.fleet_indexes, self.checkpoint_folders):
            if found.error or found.retired:
                continue
            try:
                step = tune_job(ControlArea(found.control_area), holder, settings, self.log).to_json()
            except (AsyncStreamError, OSError, ValueError) as exc:
                step = left_out(found.control_area, exc, "tuner")
                self.log.error("%s: not tuned: %s", found.control_area, step["reason"])
            self.log.info("%s: %s: %s", step.get("job") or found.control_area, step["act"], step["reason"])
            if step["act"] == "error" or step.get("error"):
                failed.append(str(step.get("job") or found.control_area))
            done.append(step)
        if failed:
            raise AsyncStreamError(f"autotune: a step failed or could not read its job: {', '.join(failed)}")
        return done
