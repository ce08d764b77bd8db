"""The fenced blocks of the README and of the docs/ pages it links, as the tests read them, with the marks that say
what each block is: a page the README sends a reader to is held to the README's standard."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
#: Every page under test, by its path in the repository: the README first.
DOCUMENTS = {"README.md": README, **{f"docs/{p.name}": p.read_text() for p in sorted((REPO / "docs").glob("*.md"))}}
#: All of them, for what may be said on any page (figures, file names).
TEXT = "\n".join(DOCUMENTS.values())
FENCE = re.compile(r"^```(?P<lang>\w*)\n(?P<body>.*?)^```$", re.M | re.S)
MARK = re.compile(r"<!-- readme-test: (?P<kind>[a-z-]+)(?: (?P<arg>.*?))? -->\s*\Z")
#: Where the README's examples keep their files, and the README's own full spec.
DAG_FOLDER = "/opt/airflow/dags"
FULL_SPEC_NAME = "clicks-to-alerts"


@dataclass(frozen=True)
class Block:
    file: str
    lang: str
    body: str
    line: int
    kind: str | None
    arg: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} ({self.lang or 'text'}{', ' + self.kind if self.kind else ''})"


def _blocks() -> list[Block]:
    found = []
    for file, text in DOCUMENTS.items():
        found += _blocks_of(file, text)
    return found


def _blocks_of(file: str, text: str) -> list[Block]:
    found = []
    for match in FENCE.finditer(text):
        before = text[: match.start()]
        mark = MARK.search(before[-300:])
        found.append(
            Block(
                file,
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
