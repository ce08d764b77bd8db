"""The supervisor DAG: an asset whose ``AssetWatcher`` runs the health watcher in the triggerer
(triggers/health.py), and a DAG scheduled on it whose one task supervises each job an event names
(operators/supervise.py). Runs one at a time, so two runs never act on the same crash; a run triggered by
hand looks at every job of the fleet.

    health watcher (triggerer) --event on a change of health--> asset --> supervise (doctor, policy, act)
                                                                          --> recovered (said once), done
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeGuard

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, AssetWatcher

from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.operators.supervise import RecoveredJobsOperator, SuperviseJobsOperator
from airflow_async_stream.state.fleet import FLEET_FILE, FleetIndex
from airflow_async_stream.triggers.health import FleetHealthTrigger

__all__ = ["supervise_dag"]

#: An Airflow callback: a notifier (``BaseNotifier``), a callable taking the context, or a list of them.
Callback = Callable[..., Any] | list[Callable[..., Any]]


def fleet_indexes_of(folder_or_index: str | Path | None) -> list[str]:
    """A desired-state folder's fleet index (its ``_fleet.yaml``), or the fleet index URL given."""
    if folder_or_index is None:
        return []
    where = str(folder_or_index)
    if _is_folder(where):
        return [FleetIndex.for_folder(where).url]
    return [where if "://" in where else os.path.abspath(where)]


def _is_folder(folder_or_index: str | Path | None) -> TypeGuard[str | Path]:
    return folder_or_index is not None and (Path(folder_or_index) / FLEET_FILE).is_file()


def supervise_dag(
    folder_or_index: str | Path | None = None,
    *,
    checkpoint_folders: list[str] | None = None,
    dag_id: str = "supervise",
    poll_s: float = 5.0,
    conn_id: str = StreamingJobHook.default_conn_name,
    startup_timeout_s: float = 300.0,
    wait_timeout_s: float = 300.0,
    on_alert: Callback | None = None,
    on_recovery: Callback | None = None,
    **dag_kwargs: Any,
) -> DAG:
    """Build the supervisor of the jobs a desired-state folder's fleet index (or a fleet index URL) and the
    ``checkpoint_folders`` name. The watcher sweeps their records every ``poll_s`` seconds; each change of a
    job's health runs the DAG, which restarts the job as its spec's ``restart`` policy says (README: Keeping
    jobs alive).

    ``on_alert`` (a notifier, a callable or a list of them) is the supervisor task's ``on_failure_callback``:
    the task fails with one line per job that needs a person, once per incident. ``on_recovery`` is the
    ``on_success_callback`` of the ``recovered`` task, which succeeds once per recovery of such a job."""
    fleet_indexes = fleet_indexes_of(folder_or_index)
    desired = [os.path.abspath(folder_or_index)] if _is_folder(folder_or_index) else []  # a restart's specs
    folders = [f if "://" in f else os.path.abspath(f) for f in checkpoint_folders or []]
    if not fleet_indexes and not folders:
        raise ValueError("supervise_dag: give a desired-state folder or fleet index, or checkpoint_folders")
    if poll_s <= 0:
        raise ValueError(f"supervise_dag: poll_s must be above 0, got {poll_s}")
    watcher = AssetWatcher(
        name=f"{dag_id}_health",
        trigger=FleetHealthTrigger(fleet_indexes=fleet_indexes, checkpoint_folders=folders, poll_s=poll_s),
    )
    health = Asset(name=f"{dag_id}_health", uri=f"airflow-async-stream://health/{dag_id}", watchers=[watcher])
    dag_kwargs.setdefault("max_active_runs", 1)
    dag_kwargs.setdefault("catchup", False)
    dag_kwargs.setdefault("tags", ["airflow-async-stream", "supervisor"])
    with DAG(dag_id=dag_id, schedule=[health], **dag_kwargs) as dag:
        supervise = SuperviseJobsOperator(
            task_id="supervise",
            fleet_indexes=fleet_indexes,
            checkpoint_folders=folders,
            conn_id=conn_id,
            desired_folders=desired,
            startup_timeout_s=startup_timeout_s,
            wait_timeout_s=wait_timeout_s,
            on_failure_callback=on_alert,
        )
        supervise >> RecoveredJobsOperator(task_id="recovered", on_success_callback=on_recovery)
        # A leaf that follows the supervisor's task, so a run it failed ends failed ("recovered" runs anyway).
        supervise >> EmptyOperator(task_id="done")
    return dag
