"""A launcher built on its first use, for a driver on a cluster only: a stop of this host's driver reads no
connection, and so wins also while a secrets backend is down, or without Airflow."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from airflow_async_stream.driver import process as driver_process
from airflow_async_stream.driver.launcher import Launcher, Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.spark_version import SparkBuild
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver

__all__ = ["DeferredLauncher"]


class DeferredLauncher:
    """A launcher built on its first use for a driver on a cluster: a stop of this host's driver (or one that
    kills nothing) reads no connection, and so wins also while a secrets backend is down, or without Airflow."""

    def __init__(self, build: Callable[[], Launcher]) -> None:
        self._build = build
        self._built: Launcher | None = None

    @property
    def built(self) -> Launcher:
        if self._built is None:
            self._built = self._build()
        return self._built

    @property
    def master(self) -> str:
        return self.built.master

    @property
    def extra(self) -> Mapping[str, Any]:
        return self.built.extra

    def check(self, spec: JobSpec) -> str:
        return self.built.check(spec)

    def spark(self) -> SparkBuild:
        return self.built.spark()

    def secrets(self, spec: JobSpec) -> SecretOptions:
        return self.built.secrets(spec)

    def launch(self, submission: Submission, control: ControlArea) -> Driver:
        return self.built.launch(submission, control)

    def state(self, driver: Driver) -> str | None:
        return self._for(driver).state(driver)

    def ended(self, driver: Driver) -> str | None:
        return self._for(driver).ended(driver)

    def kill(self, driver: Driver, target: driver_process.Target) -> str:
        return self._for(driver).kill(driver, target)

    def _for(self, driver: Driver) -> Launcher:
        """A driver process of an Airflow host is this host's business; only one on a cluster builds the launcher."""
        return LocalLauncher() if driver.on_a_host else self.built
