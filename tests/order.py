"""The order the full tier hands its files to its two workers: the longest unit files first (no JVM, about 95 s
together), while Spark's class archive is still being written (scripts/test.sh), which the first driver waits
for; every other file as collected (the integration files, then the unit files)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.session import REPO

FIRST = ("tests/unit/cli/test_commands.py", "tests/unit/cli/test_names.py")


def first_files_first(items: list[Any]) -> None:
    """Sort ``items`` (pytest's, in place): the files of ``FIRST`` first, the rest in the order collected."""
    first = [REPO / name for name in FIRST]
    items.sort(key=lambda item: Path(str(item.path)) not in first)  # stable
