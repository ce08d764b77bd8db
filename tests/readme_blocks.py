"""The README's fenced blocks as the tests read them, with the marks that say what each block is."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)
MARK = re.compile(r"<!-- readme-test: (?P<kind>[a-z-]+)(?: (?P<arg>.*?))? -->\s*\Z")
#: Where the README's examples keep their files, and the README's own full spec.
DAG_FOLDER = "/opt/airflow/dags"
FULL_SPEC_NAME = "clicks-to-alerts"


@dataclass(frozen=True)
class Block:
    lang: str
    body: str
    line: int
    kind: str | None
    arg: str

    def __str__(self) -> str:
        return f"README.md:{self.line} ({self.lang or 'text'}{', ' + self.kind if self.kind else ''})"


def _blocks() -> list[Block]:
    found = []
    for match in FENCE.finditer(README):
        before = README[: match.start()]
        mark = MARK.search(before[-300:])
        found.append(
            Block(
                match["lang"],
                match["body"],
                before.count("\n") + 1,
                mark["kind"] if mark else None,
                (mark["arg"] or "") if mark else "",
            )
        )
    return found


BLOCKS = _blocks()
PYTHON = [b for b in BLOCKS if b.lang == "python"]


def full_spec() -> str:
    specs = [b.body for b in BLOCKS if b.lang == "yaml" and b.kind is None]
    [spec] = [s for s in specs if yaml.safe_load(s).get("name") == FULL_SPEC_NAME]
    return spec
