"""Gate: continue only when Spark could restart the checkpoint synchronously."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.checkpoint import inspect_checkpoint
from airflow_async_stream.exceptions import UnsafeSyncRestartError

if TYPE_CHECKING:
    from airflow.sdk import Context

__all__ = ["SyncRestartGateOperator"]


class SyncRestartGateOperator(BaseOperator):
    """Inspect the checkpoint (read-only) and fail with the inspector's reason unless a synchronous
    restart is safe. Returns the inspection summary."""

    template_fields = ("checkpoint",)
    ui_color = "#f7f2e0"

    def __init__(self, *, checkpoint: str, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checkpoint = checkpoint

    def execute(self, context: Context) -> dict[str, Any]:
        inspection = inspect_checkpoint(self.checkpoint)
        self.log.info(
            "Checkpoint %s: latest offset %s, latest commit %s; %s",
            self.checkpoint,
            inspection.latest_offset,
            inspection.latest_commit,
            inspection.reason,
        )
        if not inspection.sync_restart_safe:
            raise UnsafeSyncRestartError(f"a synchronous restart is not safe: {inspection.reason}")
        return inspection.to_json()
