"""The layout stays telling: docs/layout.md names every module of the package in its folder's entry, and no
module of the package imports, however late, a module that imports it back (an import for type checkers only
counts too: it ties what the modules mean)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "airflow_async_stream"
LAYOUT = REPO / "docs" / "layout.md"


def _modules() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if p.name not in ("__init__.py", "__main__.py"))


def _entries(text: str) -> dict[str, str]:
    """The tree's entry of each folder: its first line and the lines indented under it."""
    tree = text.split("```", 2)[1]
    entries: dict[str, str] = {}
    current: list[str] = []
    for line in tree.splitlines():
        start = re.match(r"^  (\S.*?/(?: \S+/)*)\s", line)
        if start:
            current = [folder.rstrip("/") for folder in start[1].split()]
            for folder in current:
                entries[folder] = entries.get(folder, "") + line
        elif line.startswith(" " * 21):
            for folder in current:
                entries[folder] += line
        else:
            current = []
    return entries


def _unnamed(layout: str) -> list[str]:
    entries = _entries(layout)
    missing = []
    for path in _modules():
        relative = path.relative_to(PACKAGE)
        folder = relative.parent.as_posix()
        named = f"{folder}/{path.name}" in layout if folder != "." else path.name in entries.get("", layout)
        if folder != "." and not named:
            named = re.search(rf"(?<![\w/]){re.escape(path.name)}", entries.get(folder, "")) is not None
        if not named:
            missing.append(relative.as_posix())
    return missing


def test_the_layout_names_every_module_in_its_folder() -> None:
    assert _unnamed(LAYOUT.read_text()) == []


def test_the_layout_check_finds_a_module_left_out() -> None:
    text = LAYOUT.read_text().replace("poll.py", "p0ll.py")
    assert _unnamed(text) == ["driver/poll.py"]


def _imports(path: Path) -> set[str]:
    """Every package module ``path`` imports, at any depth of its code (a late import ties modules too)."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__")
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = node.module if node.level == 0 else module.rsplit(".", node.level)[0] + "." + node.module
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name.startswith("airflow_async_stream.") and name != module}


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                circles.append(sorted(group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return circles


def _graph() -> dict[str, set[str]]:
    files = {
        ".".join(p.relative_to(REPO).with_suffix("").parts).removesuffix(".__init__"): p for p in PACKAGE.rglob("*.py")
    }
    return {
        name: {m for m in _imports(path) if m in files and not files[m].name == "__init__.py"}
        for name, path in files.items()
        if path.name != "__init__.py"
    }


def test_no_module_imports_a_module_that_imports_it_back() -> None:
    assert _circles(_graph()) == []


def test_the_circle_check_finds_a_circle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert _circles(graph) == [["a", "b", "c"]]


def _classes(package: Path) -> dict[str, list[str]]:
    """Every class the package defines, by name: where each is defined."""
    found: dict[str, list[str]] = {}
    for path in sorted(package.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(path.relative_to(package).as_posix())
    return found


def test_no_class_name_is_defined_twice() -> None:
    """One word, one meaning (docs/layout.md, Glossary): a name read anywhere names one thing."""
    assert {name: where for name, where in _classes(PACKAGE).items() if len(where) > 1} == {}


def test_the_glossary_names_classes_the_package_defines() -> None:
    glossary = LAYOUT.read_text().split("## Glossary", 1)[1].split("\n## ", 1)[0]
    named = {
        name
        for row in glossary.splitlines()
        if row.startswith("| ")
        for name in re.findall(r"`([A-Z]\w+)`", row.split("|")[3])
    }
    assert named and named - set(_classes(PACKAGE)) == set()


def test_the_class_check_finds_a_name_defined_twice(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Step:\n    pass\n")
    (tmp_path / "b.py").write_text("class Step:\n    pass\n\n\nclass Other:\n    pass\n")
    assert _classes(tmp_path) == {"Step": ["a.py", "b.py"], "Other": ["b.py"]}
