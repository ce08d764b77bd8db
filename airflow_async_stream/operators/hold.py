"""Take and release a job's hold for a whole DAG run (e.g. a migration spanning several tasks)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, dag_run_lookup, release, take

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["ReleaseJobHoldOperator", "TakeJobHoldOperator"]


class TakeJobHoldOperator(BaseOperator):
    """Hold the job for this DAG run for up to ``ttl_s`` seconds; fails fast naming another holder.

    Steps of the same run renew it; it expires ``ttl_s`` after the last renewal if the run dies.
    """

    template_fields = ("checkpoint",)

    def __init__(self, *, checkpoint: str, purpose: str, ttl_s: float = 3600.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checkpoint = checkpoint
        self.purpose = purpose
        self.ttl_s = ttl_s

    def execute(self, context: Context) -> dict[str, Any]:
        """Returns (to XCom) who holds the job: later tasks of the run tell from it that the run held it."""
        holder = Holder.for_task(context, self.purpose)
        take(ControlArea.for_checkpoint(self.checkpoint), holder, self.ttl_s, dag_run_lookup(context))
        self.log.info("%s holds %s for %s", holder.name, self.checkpoint, self.purpose)
        return {"holder": holder.name, "checkpoint": self.checkpoint, "purpose": self.purpose}


class ReleaseJobHoldOperator(BaseOperator):
    """Give up this DAG run's hold on the job (never another run's)."""

    template_fields = ("checkpoint",)

    def __init__(self, *, checkpoint: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checkpoint = checkpoint

    def execute(self, context: Context) -> None:
        release(ControlArea.for_checkpoint(self.checkpoint), Holder.for_task(context, "release"))
