"""What the rules over a whole spec (rules.py, realtime.py) read of it. ``JobSpec`` (model.py) is one, and runs
those rules when it is made: they read it through this, so they never import the model that runs them."""

from __future__ import annotations

from typing import Protocol

from airflow_async_stream.spec.endpoints import Sink, Source, Transform
from airflow_async_stream.spec.tracking import AsyncProgress
from airflow_async_stream.spec.trigger import Trigger

__all__ = ["WholeSpec"]


class WholeSpec(Protocol):
    @property
    def application(self) -> str | None: ...
    @property
    def source(self) -> Source | None: ...
    @property
    def transform(self) -> Transform | None: ...
    @property
    def sink(self) -> Sink | None: ...
    @property
    def trigger(self) -> Trigger: ...
    @property
    def async_progress(self) -> AsyncProgress: ...
    @property
    def delivery(self) -> str | None: ...
    @property
    def stateful(self) -> bool: ...
    def spark_conf_strings(self) -> dict[str, str]: ...
