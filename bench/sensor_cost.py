"""Cost of one committed-batch check (a sensor poke) on commit logs of growing size: time and files opened."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_async_stream.state.checkpoint import inspect_checkpoint
from airflow_async_stream.state.commits import check_commits
from airflow_async_stream.state.control import ControlArea

SIZES = (100, 10_000, 100_000)
REPEAT = 30
_opened: list[str] = []


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "open" and isinstance(args[0], str):
        _opened.append(args[0])


def _make(root: Path, size: int) -> str:
    from tests.helpers import make_checkpoint

    make_checkpoint(root, list(range(size)), list(range(size)))
    control = ControlArea.for_checkpoint(str(root))
    control.ensure()
    control.write_json("status.json", {"state": "running", "heartbeat_at": time.time()})
    return str(root)


def _measure(func: Any) -> tuple[float, int]:
    func()  # warm the directory cache, as a sensor that polls every second has it warm
    times = []
    for _ in range(REPEAT):
        t0 = time.perf_counter()
        func()
        times.append(time.perf_counter() - t0)
    _opened.clear()
    func()
    return statistics.median(times) * 1000, len(_opened)


def run(log: Any = print) -> dict[str, Any]:
    sys.addaudithook(_audit)
    result = {}
    with tempfile.TemporaryDirectory(prefix="bench-sensor-") as tmp:
        for size in SIZES:
            ck = _make(Path(tmp) / str(size), size)
            poke_ms, poke_files = _measure(lambda ck=ck, size=size: check_commits(ck, size - 3, 2))
            inspect_ms, inspect_files = _measure(lambda ck=ck: inspect_checkpoint(ck))
            result[str(size)] = {
                "poke_ms": poke_ms,
                "poke_files_opened": poke_files,
                "inspect_ms": inspect_ms,
                "inspect_files_opened": inspect_files,
            }
            log(
                f"sensor cost {size:>7} commit files: poke {poke_ms:.1f} ms, {poke_files} file(s) opened; "
                f"inspect {inspect_ms:.1f} ms, {inspect_files} opened"
            )
    return result
