"""What the operators that act on one job tell Airflow's OpenLineage provider: the job's datasets and
configuration, from its spec (hooks/lineage.py). Without the provider nothing calls these."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.spec.load import resolve_spec
from airflow_async_stream.spec.model import JobSpec

__all__ = ["JobLineage"]


class JobLineage:
    """Mixin: ``get_openlineage_facets_on_start/complete`` from ``self.spec`` (and ``self.overrides``)."""

    spec: Any
    overrides: dict[str, Any] | None = None

    def lineage_spec(self) -> JobSpec:
        """The job as this task leaves it (a migration step: its target)."""
        return resolve_spec(self.spec, self.overrides)

    def get_openlineage_facets_on_start(self) -> Any:
        from airflow_async_stream.hooks.lineage import operator_lineage

        return operator_lineage(self.lineage_spec())

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        return self.get_openlineage_facets_on_start()
