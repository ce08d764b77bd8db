"""What the plain and provider sides of a comparison share, so a ratio between them measures the provider and
nothing else: the Spark settings the provider's driver gets (the plain side is started with the same), one
way of collecting progress (a listener writing to a file), and the same batches judged on each side."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["BenchError", "batches_after_warmup", "read_progress_file", "spark_settings"]

#: Both sides start Spark without a class-data-sharing archive or other JVM options (the tests use one).
JVM_ENVIRONMENT_CLEARED = ("SPARK_SUBMIT_OPTS", "SPARK_CONF_DIR", "JDK_JAVA_OPTIONS", "JAVA_TOOL_OPTIONS")


class BenchError(RuntimeError):
    """A side ran short or failed: its figures would be a smaller or different sample, so there are none."""


def spark_settings(spec: dict[str, Any]) -> dict[str, Any]:
    """The master and Spark conf the provider's driver runs ``spec`` with (the launcher's defaults, the spec's
    log level and ``spark_conf``, the runtime's redaction pattern): handed to the plain side as they are."""
    from airflow_async_stream.driver.launcher import DEFAULT_SPARK_CONF, EMBEDDED_MASTER
    from airflow_async_stream.runtime.query import SQL_REDACTION_REGEX
    from airflow_async_stream.spec.load import parse_spec

    conf = {**DEFAULT_SPARK_CONF, **parse_spec(spec).spark_conf_strings()}
    conf.setdefault("spark.sql.redaction.options.regex", SQL_REDACTION_REGEX)
    return {"master": EMBEDDED_MASTER, "conf": conf}


def read_progress_file(path: Path) -> list[dict[str, Any]]:
    """The progress events a plain side's listener wrote, one JSON object a line."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def batches_after_warmup(progress: list[dict[str, Any]], warmup: int, batches: int, who: str) -> list[dict[str, Any]]:
    """Batches ``warmup`` .. ``warmup + batches - 1`` that ran (the latest event of each id): the same ids on
    every side. BenchError when any is missing."""
    ran: dict[int, dict[str, Any]] = {}
    for event in progress:
        if "addBatch" in (event.get("duration_ms") or {}):
            ran[int(event["batch_id"])] = event
    wanted = range(warmup, warmup + batches)
    missing = [b for b in wanted if b not in ran]
    if missing:
        raise BenchError(
            f"{who}: {batches - len(missing)} of the {batches} batches after {warmup} warm-up ones ran "
            f"(missing {missing[:5]}{' ...' if len(missing) > 5 else ''})"
        )
    return [ran[b] for b in wanted]
