"""How a long wait says where it is: what it waits for, how far it is and for how long, whenever that changes
and at least every ``REPORT_EVERY_S`` seconds, so a log read mid-wait never goes quiet for longer; and the
log every step of the core writes to (``Log``: Python's logger, or the one Airflow hands a task)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["REPORT_EVERY_S", "Log", "WaitLog"]

REPORT_EVERY_S = 10.0


class Log(Protocol):
    """What the core asks of a log: ``logging.Logger`` has it, and so has the logger of an Airflow task."""

    def debug(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...
    def info(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...
    def warning(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...
    def error(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...
    def exception(self, msg: str, /, *args: Any, **kwargs: Any) -> Any: ...


class WaitLog:
    """Logs ``<what>: <where> (<n> s of <timeout> s)`` when ``where`` changes or ``every_s`` has passed."""

    def __init__(
        self,
        log: Log,
        what: str,
        timeout_s: float | None = None,
        every_s: float = REPORT_EVERY_S,
        clock: Callable[[], float] | None = None,
        started: float | None = None,
    ) -> None:
        self.log, self.what, self.timeout_s, self.every_s = log, what, timeout_s, every_s
        self.clock = clock or time.monotonic
        self.started = self.clock() if started is None else started
        self._shown: str | None = None
        self._next = self.started + every_s

    @property
    def elapsed(self) -> float:
        return self.clock() - self.started

    def __call__(self, where: str) -> None:
        now = self.clock()
        if where == self._shown and now < self._next:
            return
        self._shown, self._next = where, now + self.every_s
        limit = f" of {self.timeout_s:.0f}" if self.timeout_s is not None else ""
        self.log.info("%s: %s (%.0f s%s s)", self.what, where, now - self.started, limit)
