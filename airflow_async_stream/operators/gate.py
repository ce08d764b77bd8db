"""Gate: continue only when Spark could restart the checkpoint synchronously."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from airflow.sdk import BaseOperator

from airflow_async_stream.state.checkpoint import gate_sync_restart

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
        return gate_sync_restart(self.checkpoint, self.log).to_json()
