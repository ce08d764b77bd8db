"""The progress log's writer, the driver's side: lines of one deployment into segments (progress_log.py), at
once where the storage appends, rewritten whole or waiting for the write interval where it cannot; the
retention applied whenever a segment starts."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

from airflow_async_stream.state.progress_log import SEGMENT_LINES, Area, Retention, Segment, segments
from airflow_async_stream.state.storage import append_file, make_folder, put

__all__ = ["ProgressWriter"]


class ProgressWriter:
    """The driver's side: append events of one deployment, start segments, apply the retention.

    ``buffered`` (object stores, with the spec's ``logs.control_write_interval_s``): lines wait in memory until
    ``flush()``, which writes them in one request, the current segment rewritten whole when they fit in it, else
    a new segment of them; the segments are listed once, when the first starts, and kept track of after that.
    At most ``PENDING_LINES`` wait: beyond, the oldest are dropped (a store that refuses writes for long).
    """

    PENDING_LINES = 10_000

    def __init__(
        self, area: Area, deployment_id: str, retention: Retention | None = None, buffered: bool = False
    ) -> None:
        self.area, self.deployment_id = area, deployment_id
        self.retention = retention or Retention()
        self.buffered = buffered
        self._number = -1
        self._name = ""
        self._lines: list[bytes] = []
        self._size = 0
        self._started = 0
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._known: list[Segment] | None = None  # buffered: the segments, listed once
        #: Lines dropped because the store refused writes for longer than PENDING_LINES took to arrive.
        self.dropped = 0
        #: The newest two segments written, (name, bytes) oldest first: the status names them for readers.
        self._written: list[tuple[str, int]] = []

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def written(self) -> list[tuple[str, int]]:
        """The newest two segments on the store and their sizes, oldest first: a reader reads the log's tail
        from them without listing it."""
        return list(self._written)

    def _wrote(self) -> None:
        self._written = [w for w in self._written if w[0] != self._name][-1:] + [(self._name, self._size)]

    def append(self, event: dict[str, Any]) -> None:
        line = (json.dumps(event, sort_keys=True) + "\n").encode()
        with self._lock:
            if self.buffered:
                self._pending.append(line)
                if len(self._pending) > self.PENDING_LINES:
                    del self._pending[0]
                    self.dropped += 1
                return
            if self._number < 0 or (self._full(len(line)) and self._lines):
                self._start_segment()
            self._add(line)
            path = self.area.path(self._name)
            if self.area.appendable:
                append_file(self.area.fs, path, line)
            else:
                put(self.area.fs, path, b"".join(self._lines))
            self._wrote()

    def flush(self) -> bool:
        """Write the waiting lines (buffered): one request unless they overflow a whole segment. False when
        none waited. On a failed write they wait on for the next flush."""
        with self._lock:
            pending, self._pending = self._pending, []
            if not pending:
                return False
            before = (self._number, self._name, self._started, list(self._lines), self._size, self.written)
            try:
                self._write_lines(pending)
            except BaseException:
                self._number, self._name, self._started, self._lines, self._size, self._written = before
                self._pending = pending + self._pending
                raise
            return True

    def _write_lines(self, lines: list[bytes]) -> None:
        size = sum(len(line) for line in lines)
        fits = self._number >= 0 and not self._full(size, len(lines))
        if not fits:
            self._start_segment()
        for line in lines:
            if self._lines and self._full(len(line)):
                self._put()  # more than a whole segment waited: it is full, the rest go on in the next
                self._start_segment()
            self._add(line)
        self._put()

    def _full(self, size: int, lines: int = 1) -> bool:
        return len(self._lines) + lines > SEGMENT_LINES or self._size + size > self.retention.segment_bytes

    def _add(self, line: bytes) -> None:
        self._lines.append(line)
        self._size += len(line)

    def _put(self) -> None:
        put(self.area.fs, self.area.path(self._name), b"".join(self._lines))
        self._wrote()
        if self._known is not None:
            self._known = [s for s in self._known if s.name != self._name]
            self._known.append(Segment(self._name, self._size, self.deployment_id, self._started))

    def _start_segment(self) -> None:
        self._number += 1
        self._lines, self._size = [], 0
        folder = self.area.PROGRESS
        self._started = int(time.time())
        self._name = f"{folder}/{self.deployment_id}-{self._number:06d}-t{self._started}.jsonl"
        if self._number == 0 or not self.buffered:
            make_folder(self.area.fs, self.area.path(folder))
        self.apply_retention()

    def _segments(self) -> list[Segment]:
        """The log's segments: listed each time, or (buffered) once and then kept track of."""
        if not self.buffered:
            return segments(self.area)
        if self._known is None:
            self._known = segments(self.area)
        return list(self._known)

    def apply_retention(self, now: float | None = None) -> list[str]:
        """Remove the oldest whole segments beyond the limits; return their names."""
        now = time.time() if now is None else now
        files = [s for s in self._segments() if s.name != self._name]
        room = self.retention.max_bytes - self.retention.segment_bytes  # what the segment being written may take
        total = sum(s.size for s in files)
        removed = []
        for index, segment in enumerate(files):
            following = files[index + 1].started_at if index + 1 < len(files) else now
            too_old = following < now - self.retention.max_age_s
            if total <= room and not too_old:
                break
            try:
                self.area.fs.rm_file(self.area.path(segment.name))
            except FileNotFoundError:
                pass
            total -= segment.size
            removed.append(segment.name)
        if self._known is not None:
            self._known = [s for s in self._known if s.name not in removed]
        return removed
