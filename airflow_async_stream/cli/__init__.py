"""``airflow-async-stream``: the command line, and how a command names a job."""

from __future__ import annotations

import logging
import sys

__all__ = ["EXIT_BAD_INPUT", "EXIT_BAD_STATE", "EXIT_BROKEN_PIPE", "EXIT_OK", "PREFIX", "fail", "main", "progress_log"]

#: Exit codes, the same for every command: done; the job or checkpoint is in a state the command reports as
#: bad (an UNSAFE verdict, a diagnosis, a hold that refuses a stop, a switch not made as asked); bad input (a
#: spec, a ``--set``, an argument, a JOB that names nothing, something the command needs that is unreachable).
EXIT_OK, EXIT_BAD_STATE, EXIT_BAD_INPUT = 0, 1, 2
#: What a shell reports for a program ended by SIGPIPE (128 + 13), as `git log | head` does.
EXIT_BROKEN_PIPE = 141
#: Every line a command writes to stderr about what went wrong starts with this.
PREFIX = "airflow-async-stream: "


def fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    """Say what went wrong on stderr, with the one prefix, and give the exit code."""
    for line in message.splitlines() or [""]:
        print(PREFIX + line, file=sys.stderr)
    return code


def progress_log() -> logging.Logger:
    """Each phase of a long wait, as it is reached, on stderr (stdout keeps the result, --json included); the
    package's own log lines too, even once Airflow (a connection's launcher) has set its logging up on stdout."""
    for name, form in (("airflow_async_stream.cli.progress", "%(message)s"), ("airflow_async_stream", PREFIX + "%(message)s")):  # fmt: skip
        log = logging.getLogger(name)
        if not log.handlers:
            handler = logging.StreamHandler(sys.stderr)
            handler.setFormatter(logging.Formatter(form))
            log.addHandler(handler)
            log.setLevel(logging.INFO)
            log.propagate = False
    return logging.getLogger("airflow_async_stream.cli.progress")


def main(argv: list[str] | None = None) -> int:
    """The console script's entry point (loads the commands on first use)."""
    from airflow_async_stream.cli.commands import main as run

    return run(argv)
