"""A spec's ``logs``: Spark's log level, the driver log's rotation, the progress log's retention, how often a
driver writes its records on an object store; and their defaults, which the driver and the progress log read."""

from __future__ import annotations

from typing import Any

from pydantic import Field, StrictInt, field_validator

from airflow_async_stream.spec.strict import StrictModel

__all__ = [
    "DEFAULT_DRIVER_LOG_BYTES",
    "DEFAULT_DRIVER_LOG_FILES",
    "DEFAULT_PROGRESS_AGE_HOURS",
    "DEFAULT_PROGRESS_BYTES",
    "MAX_PROGRESS_BYTES",
    "OBJECT_STORE_WRITE_INTERVAL_S",
    "SPARK_LOG_LEVELS",
    "Logs",
]

#: The defaults of ``driver_log_max_bytes`` and ``driver_log_files``.
DEFAULT_DRIVER_LOG_BYTES = 4 * 1024 * 1024
DEFAULT_DRIVER_LOG_FILES = 3
#: The defaults of ``progress_max_bytes`` and ``progress_max_age_hours``; the largest ``progress_max_bytes``.
DEFAULT_PROGRESS_BYTES = 16 * 1024 * 1024
MAX_PROGRESS_BYTES = 64 * 1024 * 1024
DEFAULT_PROGRESS_AGE_HOURS = 168
#: The default of ``control_write_interval_s`` on object stores: at most 360 writes a job-hour.
OBJECT_STORE_WRITE_INTERVAL_S = 10.0

SPARK_LOG_LEVELS = ("ALL", "TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL", "OFF")


class Logs(StrictModel):
    """What a job may keep of its logs: Spark's log level, the driver log's rotation, the progress log's retention,
    and how often the driver writes its records on an object store.

    With the defaults a job's control area holds at most ``driver_log_files * driver_log_max_bytes`` of driver
    log and ``1.25 * progress_max_bytes`` of progress log, however long it runs.
    """

    spark_level: str = Field(
        default="WARN", description="Spark's log level in the driver (at INFO Spark writes ~9 KB per micro-batch)."
    )
    driver_log_max_bytes: StrictInt = Field(
        default=DEFAULT_DRIVER_LOG_BYTES,
        ge=4096,
        description="The driver log is rotated when a file would grow past this size.",
    )
    driver_log_files: StrictInt = Field(
        default=DEFAULT_DRIVER_LOG_FILES,
        ge=1,
        le=100,
        description="Driver log files kept: driver.log, driver.log.1, ... (oldest dropped).",
    )
    progress_max_bytes: StrictInt = Field(
        default=DEFAULT_PROGRESS_BYTES,
        ge=4096,
        le=MAX_PROGRESS_BYTES,
        description="Whole progress segments beyond this size are removed, oldest first.",
    )
    progress_max_age_hours: StrictInt | float = Field(
        default=DEFAULT_PROGRESS_AGE_HOURS,
        gt=0,
        description="Progress segments whose batches are all older than this are removed.",
    )

    control_write_interval_s: StrictInt | float | None = Field(
        default=None,
        ge=0,
        le=60,
        description="How often the driver writes its status and progress log on storage that cannot append "
        "(object stores): one request per interval, the heartbeat included; 0 writes each as it happens. Unset: "
        f"{OBJECT_STORE_WRITE_INTERVAL_S:g} on object stores, 0 on local disks and HDFS.",
    )

    def write_interval_s(self, appendable: bool) -> float:
        """The control write interval in effect on storage that can (``appendable``) or cannot append."""
        if self.control_write_interval_s is not None:
            return float(self.control_write_interval_s)
        return 0.0 if appendable else OBJECT_STORE_WRITE_INTERVAL_S

    @field_validator("spark_level", mode="before")
    @classmethod
    def _known_level(cls, value: Any) -> Any:
        if isinstance(value, str) and value.upper() in SPARK_LOG_LEVELS:
            return value.upper()
        raise ValueError(f"must be one of {', '.join(SPARK_LOG_LEVELS)}, got {value!r}")
