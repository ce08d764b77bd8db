"""Sensor: wait until at least K batches newer than a baseline are committed in a job's checkpoint."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseSensorOperator, PokeReturnValue
from airflow.sdk.configuration import conf
from airflow.sdk.exceptions import AirflowSensorTimeout, AirflowSkipException

from airflow_async_stream.exceptions import CommittedBatchesError, CommittedBatchesTimeoutError
from airflow_async_stream.insight.checkup import cure_named
from airflow_async_stream.state.checkpoint import latest_batch
from airflow_async_stream.state.commits import CommitCheck, check_commits
from airflow_async_stream.triggers.committed_batches import CommittedBatchesTrigger

if TYPE_CHECKING:
    from airflow.sdk import Context, XComArg

__all__ = ["LATEST", "CommittedBatchesSensor", "CommittedBatchesSensorTimeoutError"]

#: ``baseline_batch`` value meaning "the newest committed batch when this task starts".
LATEST = "latest"
#: The task's own state key (Airflow 3.3+) under which reschedule mode keeps its first poke.
FIRST_POKE_KEY = "committed_batches_first_poke"


def _airflow_keeps_task_state() -> bool:
    """Whether this Airflow gives tasks a state store (``context["task_state_store"]``, Airflow 3.3+)."""
    from airflow.sdk.definitions.context import Context

    return "task_state_store" in Context.__annotations__


class CommittedBatchesSensorTimeoutError(AirflowSensorTimeout, CommittedBatchesTimeoutError):
    """Not enough batches were committed in time: an Airflow sensor timeout (``soft_fail`` skips, no retry)
    that is also the provider's CommittedBatchesTimeoutError."""


class CommittedBatchesSensor(BaseSensorOperator):
    """Wait for ``min_batches`` committed batches newer than ``baseline_batch``.

    :param checkpoint: the job's checkpoint (its status is read from the control area beside it).
    :param min_batches: how many newer committed batches to wait for (default 2).
    :param baseline_batch: a batch id, None (count every committed batch), ``"latest"`` (read the
        checkpoint at the first poke), or a deployment record (``deploy.output``), whose ``start_batch``
        is used: then a retried sensor counts the same batches.
    :param wait_timeout_s: give up after this long, counted from the first poke (in reschedule mode too); raises
        AirflowSensorTimeout (``soft_fail`` skips); on an idle source the message says no data came.
    :param deferrable: poke once, then wait in the triggerer instead of holding a worker slot (default:
        Airflow's ``[operators] default_deferrable``).

    A batch counts as committed once a commit at or after its id is on storage (a restart resumes after
    it): the count is the newest commit id minus the baseline. So the batches async mode never wrote a
    commit file for count once a later commit lands, and the files Spark purges (it keeps the newest
    ``minBatchesToRetain``, 100 by default) change nothing.

    In ``mode="reschedule"`` the baseline and the clock of the first poke are kept across reschedules (the
    baseline in the task's state store, Airflow 3.3+). Fails at once when the job's status turns failed or
    stopped, or its driver disappears.
    """

    template_fields = ("checkpoint", "baseline_batch")
    ui_color = "#eef7e8"

    def __init__(
        self,
        *,
        checkpoint: str,
        min_batches: int = 2,
        baseline_batch: int | str | dict[str, Any] | XComArg | None = LATEST,
        wait_timeout_s: float = 600.0,
        deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
        poke_interval: float = 1.0,
        **kwargs: Any,
    ) -> None:
        kwargs.setdefault("timeout", wait_timeout_s + 60)  # our own deadline fires first, with a better message
        super().__init__(poke_interval=poke_interval, **kwargs)
        if min_batches < 1:
            raise ValueError(f"min_batches must be at least 1, got {min_batches}")
        if self.reschedule and not deferrable and baseline_batch == LATEST and not _airflow_keeps_task_state():
            raise ValueError(
                "baseline_batch='latest' needs Airflow 3.3+ in mode='reschedule' (the first poke's baseline is kept "
                "in the task's state store); give a batch id or the deploy task's output (deploy.output)"
            )
        self.checkpoint = checkpoint
        self.min_batches = min_batches
        self.baseline_batch = baseline_batch
        self.wait_timeout_s = wait_timeout_s
        self.deferrable = deferrable
        self._baseline: int | None = None
        self._started_at = 0.0
        self._shown = ""

    def _resolve_baseline(self) -> int | None:
        value = self.baseline_batch
        if isinstance(value, dict):  # a deployment record: the newest commit before that deploy
            value = value.get("start_batch")
        if value == LATEST:
            baseline = latest_batch(self.checkpoint, "commits")
            self.log.info("Baseline read from the checkpoint now: %s", baseline)
            return baseline
        if value is None or value == "None":
            return None
        if isinstance(value, int | float | str):
            try:
                return int(value)
            except ValueError:
                pass
        raise ValueError(f"baseline_batch must be a batch id, None or 'latest', got {value!r}")

    def _first_poke(self, context: Context) -> tuple[int | None, float]:
        """The baseline and start time of this wait: taken now, or in reschedule mode at the first poke."""
        if not (self.reschedule and "ti" in context):
            return self._resolve_baseline(), time.time()
        ti, store = context["ti"], context.get("task_state_store")
        first_try = ti.max_tries - (self.retries or 0) + 1  # as Airflow dates the first reschedule
        first_poke = ti.get_first_reschedule_date(context)
        kept = store.get(FIRST_POKE_KEY) if store is not None else None
        baseline = kept.get("baseline") if isinstance(kept, dict) else None
        if (
            first_poke is not None
            and isinstance(kept, dict)
            and kept.get("first_try") == first_try
            and isinstance(baseline, int | None)
        ):
            self.log.info("Baseline kept from the first poke: %s", baseline)
            return baseline, first_poke.timestamp()
        if first_poke is not None and self.baseline_batch == LATEST:
            raise CommittedBatchesError(
                "baseline_batch='latest' in reschedule mode: the baseline of the first poke was not kept (it needs "
                "Airflow 3.3's task state store); give a batch id or the deploy task's output instead"
            )
        baseline = self._resolve_baseline()
        if first_poke is None and store is not None:
            store.set(FIRST_POKE_KEY, {"baseline": baseline, "first_try": first_try})
        return baseline, (first_poke.timestamp() if first_poke is not None else time.time())

    def _check(self) -> CommitCheck:
        check = check_commits(self.checkpoint, self._baseline, self.min_batches)
        if check.progress() != self._shown:
            self._shown = check.progress()
            self.log.info("%s", self._shown)
        if check.done:
            return check
        if check.job_error:
            with cure_named(self.checkpoint, self.log):
                raise CommittedBatchesError(check.job_error)
        waited = time.time() - self._started_at
        if waited >= self.wait_timeout_s:
            raise CommittedBatchesSensorTimeoutError(check.timeout_message(waited))
        return check

    def execute(self, context: Context) -> dict[str, Any]:
        self._baseline, self._started_at = self._first_poke(context)
        if not self.deferrable:  # Airflow's own loop: poke, reschedule or sleep, soft_fail and timeouts
            result: dict[str, Any] = super().execute(context)
            return result
        try:  # poke once: no trigger round-trip when the answer is already there
            check = self._check()
        except CommittedBatchesSensorTimeoutError as exc:
            if self.soft_fail or self.never_fail:
                raise AirflowSkipException(f"Skipping: {exc}") from exc
            raise
        if check.done:
            return check.to_json()
        self.defer(
            trigger=CommittedBatchesTrigger(
                checkpoint=self.checkpoint,
                baseline=self._baseline,
                min_batches=self.min_batches,
                deadline=self._started_at + self.wait_timeout_s,
                started_at=self._started_at,
                poll_interval=float(self.poke_interval),
            ),
            method_name="execute_complete",
            timeout=timedelta(seconds=self.wait_timeout_s + 60),
        )

    def poke(self, context: Context) -> PokeReturnValue:
        check = self._check()
        return PokeReturnValue(is_done=check.done, xcom_value=check.to_json() if check.done else None)

    def execute_complete(self, context: Context, event: dict[str, Any]) -> dict[str, Any]:
        status, message = event.get("status"), event.get("message")
        if status == "success":
            self.log.info("%s", message)
            return dict(event.get("check") or {})
        if status == "timeout":
            raise CommittedBatchesSensorTimeoutError(message)
        with cure_named(self.checkpoint, self.log):
            raise CommittedBatchesError(message or f"unexpected trigger event {event!r}")
