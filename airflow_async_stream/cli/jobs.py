"""``list``: one line per job (name, state, async settings, last batch and its age, restart verdict), from this
host's registry, the fleet indexes and checkpoint folders of the ``[async_stream]`` settings (the sources the
streaming-jobs page reads, so every host lists the same) and those named on the command line. Read-only. A job
or source that cannot be read is its own line with the reason, and exit 1."""

from __future__ import annotations

import argparse
import json
import logging
import os
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, fail
from airflow_async_stream.insight import overview
from airflow_async_stream.state import registry
from airflow_async_stream.state.sources import Found, configured, find_jobs, once_each
from airflow_async_stream.state.typed import printable

__all__ = ["add_list", "cmd_list"]

#: The columns of a line, and their headings.
_COLUMNS = ("NAME", "HEALTH", "STATE", "ASYNC PROGRESS", "LAST BATCH", "RESTART")
#: The restart outlook in a line's words (insight/health.py restart_outlook).
_OUTLOOK = {"none": "-", "safe": "safe", "needs_migration": "sync needs migration", "unsafe": "UNSAFE"}


def _registered() -> list[Found]:
    source = f"this host's registry {registry.registry_dir()}"
    return [Found(e["job"], e.get("checkpoint") or "", e.get("control_area") or "", source) for e in registry.entries()]


def _async(row: dict[str, Any]) -> str:
    settings = row.get("async")
    if not settings:
        return "-"
    return f"on, interval {settings.get('checkpoint_interval_ms')} ms" if settings.get("enabled") else "off"


def _last_batch(row: dict[str, Any]) -> str:
    last = row.get("last_batch")
    if not last:
        return "none"
    age = float(last["age_s"])
    ago = f"{age:.0f} s" if age < 120 else f"{age / 60:.0f} min" if age < 7200 else f"{age / 3600:.1f} h"
    return f"{last['batch_id']} ({ago} ago)"


def _restart(row: dict[str, Any]) -> str:
    return _OUTLOOK[(row.get("restart") or {}).get("outlook") or "none"]


def _line(row: dict[str, Any]) -> tuple[str, ...]:
    health = (row.get("health") or {}).get("verdict") or "-"
    return (row["name"], health, str(row["state"]), _async(row), _last_batch(row), _restart(row))


def _print(rows: list[dict[str, Any]]) -> None:
    if not rows:
        print("no jobs found")
        return
    cells = {id(row): tuple(printable(cell) for cell in _line(row)) for row in rows if not row["error"]}
    table = [_COLUMNS, *cells.values(), *((row["name"], "unreadable", "", "", "", "") for row in rows)]
    widths = [max(len(line[i]) for line in table) for i in range(len(_COLUMNS) - 1)]

    def show(line: tuple[str, ...]) -> None:
        print("  ".join(f"{cell:<{width}}" for cell, width in zip(line, widths, strict=False)) + "  " + line[-1])

    show(_COLUMNS)
    for row in rows:
        if row["error"]:  # the reason in place of the columns, which it would stretch
            print(f"{printable(row['name']):<{widths[0]}}  {'unreadable':<{widths[1]}}  {printable(row['error'])}")
        else:
            show(cells[id(row)])
    print(f"{len(rows)} job{'' if len(rows) == 1 else 's'}")


def cmd_list(args: argparse.Namespace) -> int:
    for option, urls in (("--index", args.index), ("--folder", args.folder)):
        for url in urls:
            if "://" not in url and not os.path.isdir(url):
                return fail(f"{option} {url}: no folder there")
    found = [] if args.no_registry else _registered()
    settings = {} if args.no_settings else configured() or {}
    found += find_jobs(
        args.index + settings.get("fleet_indexes", []), args.folder + settings.get("checkpoint_folders", [])
    )
    logging.getLogger("airflow_async_stream.insight").setLevel(logging.ERROR)  # a row says so itself
    rows = overview.job_rows(once_each(found))
    if args.json:
        print(json.dumps(rows, indent=2, sort_keys=True, default=str))
    else:
        _print(rows)
    return EXIT_BAD_STATE if any(row["error"] for row in rows) else EXIT_OK


def add_list(sub: Any) -> None:
    p = sub.add_parser(
        "list",
        help="the jobs this host deployed, and those of the [async_stream] settings' and the named fleet indexes "
        "and checkpoint folders: one line each",
    )
    p.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="URL",
        help="a fleet index (a _fleet.yaml's `index:`): its jobs too; repeat",
    )
    p.add_argument(
        "--folder",
        action="append",
        default=[],
        metavar="URL",
        help="a folder of checkpoints: each with a control area beside it is a job; repeat",
    )
    p.add_argument("--no-registry", action="store_true", help="leave out the jobs of this host's registry")
    p.add_argument(
        "--no-settings",
        action="store_true",
        help="leave out the fleet indexes and checkpoint folders of Airflow's [async_stream] settings",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output: every job's row, as the page reads it")
    p.set_defaults(func=cmd_list)
