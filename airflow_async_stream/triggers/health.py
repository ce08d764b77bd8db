"""The health watcher: a ``BaseEventTrigger`` the triggerer runs for an ``AssetWatcher`` (supervise_dag), that
sweeps a fleet's small records and emits an event only when a job's health changes (supervise/watch.py), and
sends each job's figures through Airflow's metrics (triggers/stats.py).

Watchers of the same fleet at the same pace share one sweep (``shared_stream_key``), each emitting every
change. The sweep runs in a thread: the triggerer's event loop is never blocked by storage.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Hashable
from typing import Any

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from airflow_async_stream.state.sources import find_jobs
from airflow_async_stream.supervise.memory import Memory
from airflow_async_stream.supervise.watch import Change, sweep
from airflow_async_stream.triggers.stats import has_tags, send_change, send_figures

__all__ = ["FleetHealthTrigger"]


def _sweep_fleet(
    fleet_indexes: list[str], checkpoint_folders: list[str], log: Any, memory: Memory | None = None
) -> list[Change]:
    """One sweep: the changes of health, each job's figures and each incident sent through Airflow's metrics;
    ``memory``: what the sweeps before read (supervise/memory.py)."""
    jobs = []
    for found in find_jobs(fleet_indexes, checkpoint_folders, memory.indexes if memory is not None else None):
        if found.error:
            log.warning("Not watched: %s: %s", found.source, found.error)
        elif not found.retired:
            jobs.append((found.name, found.control_area, found.checkpoint))
    tagged = has_tags()
    changes = sweep(jobs, measure=lambda figures: send_figures(figures, tagged), memory=memory)
    for change in changes:
        send_change(change, tagged)
    return changes


class FleetHealthTrigger(BaseEventTrigger):
    """Emit ``Change.to_json()`` for each change of health of a job the fleet indexes or checkpoint folders
    name, polling every ``poll_s`` seconds; it runs until the triggerer stops it."""

    def __init__(self, *, fleet_indexes: list[str], checkpoint_folders: list[str], poll_s: float = 5.0) -> None:
        super().__init__()
        self.fleet_indexes = list(fleet_indexes)
        self.checkpoint_folders = list(checkpoint_folders)
        self.poll_s = float(poll_s)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {"fleet_indexes": self.fleet_indexes, "checkpoint_folders": self.checkpoint_folders, "poll_s": self.poll_s},
        )

    def shared_stream_key(self) -> Hashable | None:
        return ("airflow-async-stream-health", tuple(self.fleet_indexes), tuple(self.checkpoint_folders), self.poll_s)

    @classmethod
    async def open_shared_stream(cls, kwargs: dict[str, Any]) -> AsyncIterator[Any]:
        """One sweep every ``poll_s``: the changes it found (a sweep that fails is logged and tried again). The
        sweeps share a memory, so each reads only what changed since the one before."""
        trigger = cls(**kwargs)
        memory = Memory()
        while True:
            try:
                changes = await asyncio.to_thread(
                    _sweep_fleet, trigger.fleet_indexes, trigger.checkpoint_folders, trigger.log, memory
                )
            except Exception:  # noqa: BLE001 - one failed sweep (storage unreachable) must not end the watch
                trigger.log.warning("The health sweep failed; trying again in %s s", trigger.poll_s, exc_info=True)
                changes = []
            yield [change.to_json() for change in changes]
            await asyncio.sleep(trigger.poll_s)

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        async for changes in shared_stream:
            for change in changes:
                self.log.info("%s: %s (%s)", change["job"], change["event"], change["reason"])
                yield TriggerEvent(change)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        async for event in self.filter_shared_stream(type(self).open_shared_stream(self.serialize()[1])):
            yield event
