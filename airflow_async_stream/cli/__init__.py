"""``airflow-async-stream``: the command line, and how a command names a job."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int:
    """The console script's entry point (loads the commands on first use)."""
    from airflow_async_stream.cli.commands import main as run

    return run(argv)
