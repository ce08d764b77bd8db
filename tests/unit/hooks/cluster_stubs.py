"""Stand-ins for what no machine here runs: a Spark connection by environment, a stub command that records how it
was called (spark-submit, yarn), and reading those calls back."""

from __future__ import annotations

import json
import stat
import sys
from pathlib import Path
from typing import Any

import pytest


def connection(monkeypatch: pytest.MonkeyPatch, conn_id: str, host: str, **extra: Any) -> None:
    monkeypatch.setenv(
        f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps({"conn_type": "spark", "host": host, "extra": extra})
    )


def stub(folder: Path, name: str, output: str) -> Path:
    """An executable that appends its arguments (one JSON list per call) to <name>.calls and prints ``output``."""
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text(
        f"#!{sys.executable}\n"
        "import json, sys\n"
        f"open({str(folder / (name + '.calls'))!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
        f"print({output!r})\n"
    )
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def calls(folder: Path, name: str) -> list[list[str]]:
    return [json.loads(line) for line in (folder / f"{name}.calls").read_text().splitlines()]
