"""A driver's output, capped: spark-submit writes into a pipe, a small pump writes rotated files from it.

    python -m airflow_async_stream.driver.log PATH --max-bytes N --files K [--exit-record CONTROL_AREA
        --deployment ID]  < spark-submit's output

The pump writes ``PATH`` until the next line would take it past ``N`` bytes, then renames ``PATH`` to
``PATH.1`` (``PATH.1`` to ``PATH.2`` ...) and starts a new ``PATH``; at most ``K`` files are kept, so a job
that runs for months holds at most ``N * K`` bytes of driver log. The pump runs in its own session, so a
stop that kills the driver's process group leaves it to write the driver's last lines; it ends when the
driver and everything it started have closed their output. It never stops reading: when a write fails (a
full disk), it drops that output and says so in the log once it can write again, so the driver never
blocks on a full pipe. Standard library only: it starts in a few milliseconds. At the end of the output it
records, with ``--exit-record``, that the driver has exited (exits.py: what other hosts wait for).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from typing import BinaryIO

__all__ = ["RotatingLog", "rotated_names", "start_pump", "tail_lines"]

_READ_LINE_LIMIT = 64 * 1024


def _no_follow(path: str, flags: int) -> BinaryIO:
    """Open the log for writing, never through a symlink at its name (ELOOP, counted as dropped output): the
    control area's storage is written by others too. The one such open outside state/storage.py, whose imports
    this pump does without."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | flags, 0o644)
    return os.fdopen(fd, "ab")


def rotated_names(path: str, files: int) -> list[str]:
    """``PATH, PATH.1, ... PATH.<files-1>``, newest first."""
    return [path] + [f"{path}.{n}" for n in range(1, files)]


class RotatingLog:
    """Append lines to ``path``, rotating before a line would take the file past ``max_bytes``."""

    def __init__(self, path: str, max_bytes: int, files: int) -> None:
        self.path, self.max_bytes, self.files = path, max_bytes, files
        self._fh: BinaryIO | None = None
        self._size = 0
        self._dropped = 0
        self._drop_reason = ""

    def _open(self) -> None:
        self._fh = _no_follow(self.path, os.O_APPEND)  # held open across writes
        self._size = self._fh.tell()

    def _rotate(self) -> None:
        self.close()
        names = rotated_names(self.path, self.files)
        for older, newer in zip(reversed(names[1:]), reversed(names[:-1]), strict=True):
            if os.path.exists(newer):
                os.replace(newer, older)
        self._fh = _no_follow(self.path, os.O_TRUNC)  # a single file is simply started again
        self._size = 0

    def write(self, line: bytes) -> None:
        """Write one line (cut to ``max_bytes``); on an error, count it as dropped and go on."""
        line = line[: self.max_bytes]
        try:
            if self._dropped:
                reason = self._drop_reason
                self._write_line(
                    f"[airflow-async-stream: {self._dropped} bytes of driver output dropped: {reason}]\n".encode()
                )
                self._dropped = 0
            self._write_line(line)
        except OSError as exc:
            self._dropped += len(line)
            self._drop_reason = exc.strerror or str(exc)
            self.close()

    def _write_line(self, line: bytes) -> None:
        if self._fh is None:
            self._open()
        if self._size and self._size + len(line) > self.max_bytes:
            self._rotate()
        assert self._fh is not None
        self._fh.write(line)
        self._fh.flush()
        self._size += len(line)

    def close(self) -> None:
        """Close the file (quietly: a close that fails on a full disk is one more drop, already counted)."""
        fh, self._fh = self._fh, None
        if fh is not None:
            try:
                fh.close()
            except OSError:
                pass


def pump(source: BinaryIO, log: RotatingLog) -> None:
    """Copy ``source`` line by line into ``log`` until end of file."""
    while line := source.readline(_READ_LINE_LIMIT):
        log.write(line)
    log.close()


def start_pump(
    path: str, max_bytes: int, files: int, exit_record: tuple[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """Start a pump writing ``path``; return it and the pipe's write end, for the driver's stdout and stderr.

    The caller hands the write end to spark-submit and closes its own copy, so the pump sees end of file
    when the driver's output closes; with ``exit_record`` (control area URL, deployment id) it then records
    the driver's exit there.
    """
    open(path, "ab").close()  # a log that cannot be written fails the deploy here, not silently in the pump
    read_end, write_end = os.pipe()
    try:
        process = subprocess.Popen(
            [sys.executable, "-m", "airflow_async_stream.driver.log", path, "--max-bytes", str(max_bytes)]
            + ["--files", str(files)]
            + (["--exit-record", exit_record[0], "--deployment", exit_record[1]] if exit_record else []),
            stdin=read_end,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
    except BaseException:
        os.close(write_end)
        raise
    finally:
        os.close(read_end)
    return process, write_end


def tail_lines(read: Callable[[str], bytes], path: str, lines: int, files: int = 2) -> str:
    """The last ``lines`` lines of a rotated log, read with ``read`` (FileNotFoundError for a missing file)."""
    collected: list[str] = []
    for name in rotated_names(path, files):
        try:
            text = read(name).decode("utf-8", errors="replace")
        except FileNotFoundError:
            continue
        collected = text.splitlines() + collected
        if len(collected) >= lines:
            break
    return "\n".join(collected[-lines:])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path")
    parser.add_argument("--max-bytes", type=int, required=True)
    parser.add_argument("--files", type=int, required=True)
    parser.add_argument("--exit-record", metavar="CONTROL_AREA", help="record the driver's exit there at the end")
    parser.add_argument("--deployment", help="the deployment whose driver's exit is recorded")
    args = parser.parse_args(argv)
    log = RotatingLog(args.path, args.max_bytes, args.files)
    pump(sys.stdin.buffer, log)
    if args.exit_record:
        _record_exit(args.exit_record, args.deployment, log)
    return 0


def _record_exit(control_url: str, deployment_id: str, log: RotatingLog) -> None:
    """Every process holding the driver's output has closed it: the driver has exited. Said in its control
    area for the hosts that cannot see this one's processes (imported only now: the pump starts fast)."""
    try:
        from airflow_async_stream.driver.exits import record_exit
        from airflow_async_stream.state.control import ControlArea

        record_exit(ControlArea(control_url), deployment_id, "its output closed (the log pump read it to the end)")
    except Exception as exc:  # noqa: BLE001 - said in the log the driver's readers see; never lost silently
        log.write(f"[airflow-async-stream: the driver's exit could not be recorded in {control_url}: {exc}]\n".encode())
        log.close()


if __name__ == "__main__":
    sys.exit(main())
