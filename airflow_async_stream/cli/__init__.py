"""``airflow-async-stream``: the command line, and how a command names a job."""

from __future__ import annotations

from typing import Any

__all__ = ["EXIT_BROKEN_PIPE", "EXIT_INVALID", "EXIT_OK", "EXIT_USAGE", "main"]

#: Exit codes: done, a spec or a job is wrong, bad usage (or a job that cannot be reached).
EXIT_OK, EXIT_INVALID, EXIT_USAGE = 0, 1, 2
#: What a shell reports for a program ended by SIGPIPE (128 + 13), as `git log | head` does.
EXIT_BROKEN_PIPE = 141


def main(argv: list[str] | None = None) -> int:
    """The console script's entry point (loads the commands on first use)."""
    from airflow_async_stream.cli.commands import main as run

    return run(argv)


def __getattr__(name: str) -> Any:
    from airflow_async_stream._moved import renamed

    return renamed(__name__, name)  # cli.py's other names, now in its parts: _moved.NAMES
