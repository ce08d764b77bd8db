"""bench/results/results.json: one section per benchmark, each saying which run measured it, when, on what
machine and in how many seconds; a partial run (``--only``) replaces its own sections and no other."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Run", "read", "record"]

#: Keys of the file that are not a benchmark's section.
NOT_SECTIONS = {"targets"}
#: Keys an earlier layout kept at the top for every section at once.
_EARLIER_TOP = ("machine", "started", "measured", "seconds")


@dataclass(frozen=True)
class Run:
    """One invocation of ``bench.run``: the stamp every section it measures carries."""

    started: str
    machine: dict[str, Any]
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])

    def stamp(self, measured_at: str, seconds: float) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "run_started": self.started,
            "measured_at": measured_at,
            "seconds": round(seconds, 1),
            "machine": self.machine,
        }


def read(path: Path) -> dict[str, Any]:
    """The file as it stands, an earlier layout's top-level stamps moved into each section (none: no file)."""
    if not path.exists():
        return {}
    results: dict[str, Any] = json.loads(path.read_text())
    earlier = {key: results.pop(key) for key in _EARLIER_TOP if key in results}
    for name, section in results.items():
        if name in NOT_SECTIONS or not isinstance(section, dict) or "run" in section:
            continue
        section["run"] = {
            "run_id": None,
            "measured_at": (earlier.get("measured") or {}).get(name) or earlier.get("started"),
            "seconds": (earlier.get("seconds") or {}).get(name),
            "machine": earlier.get("machine"),
        }
    return results


def record(results: dict[str, Any], name: str, section: dict[str, Any], stamp: dict[str, Any]) -> dict[str, Any]:
    """``results`` with ``name``'s section replaced by ``section`` under ``stamp``; the others untouched."""
    return {**results, name: {**section, "run": stamp}}
