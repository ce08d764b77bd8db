"""The command line called as a function: what unit tests use (tests/unit/cli/test_process.py alone starts it as
a process, for what only a process shows: the console script, exit by signal, another user, Airflow blocked)."""

from __future__ import annotations

import io
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass

from airflow_async_stream.cli import main


@dataclass(frozen=True)
class Ran:
    """What a command left: its exit code and what it wrote (the names of a finished process's)."""

    returncode: int
    stdout: str
    stderr: str


@contextmanager
def environment(changes: Mapping[str, str | None] | None) -> Iterator[None]:
    """``os.environ`` with ``changes`` for the block (a ``None`` value unsets its variable), as it was after."""
    before = dict(os.environ)
    for name, value in (changes or {}).items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(before)


def cli(*args: str, env: Mapping[str, str | None] | None = None) -> Ran:
    """Run ``airflow-async-stream ARGS`` in this process, the environment changed by ``env`` meanwhile."""
    out, err = io.StringIO(), io.StringIO()
    with environment(env), redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exc:  # argparse's usage errors and --help
            code = exc.code if isinstance(exc.code, int) else 0 if exc.code is None else 1
    return Ran(code, out.getvalue(), err.getvalue())
