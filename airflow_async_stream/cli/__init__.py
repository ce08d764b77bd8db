"""``airflow-async-stream``: the command line, and how a command names a job."""

from __future__ import annotations

import logging
import sys
from typing import Any, TextIO

from airflow_async_stream.state.typed import printable

__all__ = [
    "BAD_STATE_MEANS",
    "EXIT_BAD_INPUT",
    "EXIT_BAD_STATE",
    "EXIT_BROKEN_PIPE",
    "EXIT_OK",
    "PREFIX",
    "Printable",
    "Stderr",
    "exit_code_table",
    "exit_codes",
    "fail",
    "indented",
    "main",
    "progress_log",
]

#: Exit codes: done; the job or checkpoint is in a state the command reports as bad (per command:
#: BAD_STATE_MEANS); bad input (a spec, a ``--set``, an argument, a JOB that names nothing, something the
#: command needs that is unreachable).
EXIT_OK, EXIT_BAD_STATE, EXIT_BAD_INPUT = 0, 1, 2
#: What a shell reports for a program ended by SIGPIPE (128 + 13), as `git log | head` does.
EXIT_BROKEN_PIPE = 141
#: What exit 1 means, per command (the README's table and ``--help`` print this); a command not named never
#: exits 1. 0 is done with nothing found wrong, 2 bad input, 141 the reader went away.
BAD_STATE_MEANS = {
    "status": "the job failed (its state is `failed`)",
    "inspect": "a synchronous restart is UNSAFE (`--no-fail` exits 0 then)",
    "doctor": "it found something wrong",
    "stop": "the job had failed (before or while stopping), a hold refused the stop, or its driver was not seen "
    "to exit; with a control area that cannot carry a stop, no driver of this host proved itself, or its stop "
    "could not be recorded",
    "resume": "the job runs already, or could not be brought back",
    "release": "the hold has not expired (add `--force`), or it, or the fence, cannot be read (add `--force` to "
    "set it aside)",
    "switch": "the switch was not made as asked",
    "list": "a job's records could not be read",
}
#: The commands that never exit 1 (their findings are bad input: 2).
_NEVER_BAD_STATE = ("validate", "plan", "report", "incidents", "schema")


def exit_codes() -> list[tuple[int, str]]:
    """The exit codes and what each means, per command: the README's table and ``--help`` print them."""
    return [
        (EXIT_OK, "done, and nothing found wrong"),
        *((EXIT_BAD_STATE, f"`{command}`: {means}") for command, means in BAD_STATE_MEANS.items()),
        (EXIT_BAD_STATE, f"never for {', '.join(f'`{c}`' for c in _NEVER_BAD_STATE)}"),
        (
            EXIT_BAD_INPUT,
            "bad input: a spec error (`validate`, `plan`, a `--set`), a bad argument, a JOB that names "
            "nothing, or something the command needs that is not there (no Java for `--analyze`)",
        ),
        (EXIT_BROKEN_PIPE, "the reader of the output went away (`... | head`)"),
    ]


def exit_code_table() -> str:
    """The exit codes as the README's Markdown table."""
    rows = [f"| {code} | {means.replace('|', chr(92) + '|')} |" for code, means in exit_codes()]
    return "\n".join(["| code | means |", "| --- | --- |", *rows])


#: Every line a command writes to stderr about what went wrong starts with this.
PREFIX = "airflow-async-stream: "


class Printable:
    """A command's stdout or stderr: every control character but a newline or a tab escaped as it is
    written, so a value read from a record (an ESC sequence in a forged reason) moves no cursor and clears no
    screen (state/typed.py ``printable``)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, text: str) -> int:
        return self.stream.write(printable(text, lines=True))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def indented(value: object, indent: int) -> str:
    """A value for a labelled line of output, its later lines (a Spark error's, or a newline in a forged record)
    indented by ``indent``: none starts a line of its own, where it could pass for another label."""
    first, *rest = str(value).rstrip("\n").split("\n")  # only a newline moves a terminal to a new line
    return "\n".join([first, *(" " * indent + line for line in rest)])


def fail(message: str, code: int = EXIT_BAD_INPUT) -> int:
    """Say what went wrong on stderr, with the one prefix, and give the exit code."""
    for line in message.splitlines() or [""]:
        print(PREFIX + line, file=sys.stderr)
    return code


class Stderr(logging.StreamHandler):  # type: ignore[type-arg]
    """A log handler writing to whatever ``sys.stderr`` is when a line is logged, not when it was made: a
    command run in-process (a test, a caller redirecting stderr) gets its own lines."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """StreamHandler's own set-up assigns it; the stream is always the current stderr."""


def progress_log() -> logging.Logger:
    """Each phase of a long wait, as it is reached, on stderr (stdout keeps the result, --json included); the
    package's own log lines too, even once Airflow (a connection's launcher) has set its logging up on stdout."""
    for name, form in (
        ("airflow_async_stream.cli.progress", "%(message)s"),
        ("airflow_async_stream", PREFIX + "%(message)s"),
    ):
        log = logging.getLogger(name)
        if not log.handlers:
            handler = Stderr()
            handler.setFormatter(logging.Formatter(form))
            log.addHandler(handler)
            log.setLevel(logging.INFO)
            log.propagate = False
    return logging.getLogger("airflow_async_stream.cli.progress")


def main(argv: list[str] | None = None) -> int:
    """The console script's entry point (loads the commands on first use)."""
    from airflow_async_stream.cli.commands import main as run

    return run(argv)
