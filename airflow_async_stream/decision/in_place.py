"""Which spec changes a running driver makes in place (a new query on the same checkpoint, same SparkSession),
read by decision/needs.py and by the driver itself before it stops anything.

Stopping a query between micro-batches and starting the next one in a warm session pauses the stream for
about a second, where a new driver pauses it for 8 s here and far longer where executors must be allocated.
What a query is started with may change that way: the async progress options, the trigger (but not into or
out of real-time mode, which takes a restart), and the
``spark.sql.*`` settings Spark lets a session change at runtime (the driver asks Spark, before it stops
anything). What the JVM or the driver was started with may not: other ``spark_conf`` (memory, packages,
the master), the application file, the source, transform and sink, the logs' settings. Such a change is
refused and the caller redeploys.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from airflow_async_stream.spec.model import JobSpec

__all__ = [
    "RUNTIME_CONF_PREFIX",
    "configuration_of",
    "in_place_refusals",
    "new_driver_reasons",
    "runtime_conf_changes",
    "spec_part",
]

#: ``spark_conf`` keys that may change in place, if Spark says the key is modifiable at runtime.
RUNTIME_CONF_PREFIX = "spark.sql."
#: health, restart, state, autotune and delivery are read by readers and the supervisor only: the running query does not change.
_IN_PLACE = frozenset({"async_progress", "trigger", "spark_conf", "health", "restart", "state", "autotune", "delivery"})
_WHY = {
    "name": "another name is another job: deploy it",
    "checkpoint": "another checkpoint is another job: deploy it",
    "application": "the application file runs once per driver: redeploy",
    "python_dependencies": "a driver's Python files are shipped when it starts: redeploy",
    "source": "the query's source is built once per driver: redeploy",
    "transform": "the query's transform is built once per driver: redeploy",
    "sink": "the query's sink is built once per driver: redeploy",
    "logs": "log settings are applied when the driver starts: redeploy",
    "lineage": "lineage settings are read when the driver starts: redeploy",
    "stateful": "the stateful declaration is checked when the driver starts: redeploy",
    "real_time": "a query moves between micro-batches and real-time mode only by a restart: redeploy",
    "async_off": "turning async progress tracking off in place needs the gate (require_sync_safe=True, "
    "--require-sync-safe): a checkpoint with gaps cannot run synchronously yet",
}


def in_place_refusals(current: JobSpec, new: JobSpec, require_sync_safe: bool = False) -> list[tuple[str, str]]:
    """``(field, reason)`` for every change from ``current`` to ``new`` that needs a new driver, and for
    turning async progress tracking off without the gate (on a gapped checkpoint Spark's synchronous query
    would die at its first batch: the very trap this provider exists to avoid)."""
    return new_driver_reasons(current.to_mapping(), new.to_mapping(), require_sync_safe)


def new_driver_reasons(
    before: Mapping[str, Any], after: Mapping[str, Any], require_sync_safe: bool = False
) -> list[tuple[str, str]]:
    """:func:`in_place_refusals` of two spec mappings (what decision/needs.py classifies)."""
    problems: list[tuple[str, str]] = []
    if spec_part(before, "async_progress", "enabled") and not spec_part(after, "async_progress", "enabled"):
        if not require_sync_safe:
            problems.append(("async_progress.enabled", _WHY["async_off"]))
    if (spec_part(before, "trigger", "real_time") is None) != (spec_part(after, "trigger", "real_time") is None):
        problems.append(("trigger.real_time", _WHY["real_time"]))
    for key in sorted(set(before) | set(after)):
        if before.get(key) == after.get(key):
            continue
        if key == "spark_conf":
            problems += _conf_refusals(before.get(key) or {}, after.get(key) or {})
        elif key not in _IN_PLACE:
            problems.append((key, _WHY.get(key, "set when the driver starts: redeploy")))
    return problems


def spec_part(spec: Mapping[str, Any], *path: str) -> Any:
    """The value at ``path`` in a spec mapping (None where any step is missing or not a mapping)."""
    part: Any = spec
    for key in path:
        part = part.get(key) if isinstance(part, Mapping) else None
    return part


def _conf_refusals(before: dict[str, Any], after: dict[str, Any]) -> list[tuple[str, str]]:
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return [
        (f"spark_conf.{k}", "set when the driver's JVM starts: redeploy")
        for k in changed
        if not k.startswith(RUNTIME_CONF_PREFIX)
    ]


def runtime_conf_changes(current: JobSpec, new: JobSpec) -> tuple[dict[str, str], list[str]]:
    """The ``spark.sql.*`` settings to set, and those to unset, to go from ``current`` to ``new``."""
    before = {k: v for k, v in current.spark_conf_strings().items() if k.startswith(RUNTIME_CONF_PREFIX)}
    after = {k: v for k, v in new.spark_conf_strings().items() if k.startswith(RUNTIME_CONF_PREFIX)}
    to_set = {k: v for k, v in after.items() if before.get(k) != v}
    return to_set, sorted(set(before) - set(after))


def configuration_of(spec: JobSpec) -> dict[str, Any]:
    """What a query was started with that a switch may change: recorded with every batch and switch."""
    return {
        "async_progress": spec.async_progress.in_effect(),
        "trigger": spec.trigger.model_dump(exclude_none=True),
    }
