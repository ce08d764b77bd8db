"""The package's own rules of shape: short functions, modules of a readable length (split by concept, not by
size in bytes), a small root, tests that share helpers."""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "airflow_async_stream"
MAX_FUNCTION_LINES = 60


def test_no_function_in_the_package_is_longer_than_60_lines() -> None:
    long = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1  # type: ignore[operator]
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE.parent)}:{node.lineno} {node.name} ({lines} lines)")
    assert long == []


MAX_ROOT_MODULES = 8
MAX_MODULE_LINES = 350
TESTS = PACKAGE.parent / "tests"


def _root_modules(package: Path) -> list[str]:
    return sorted(p.name for p in package.glob("*.py"))


def _over_limits(package: Path) -> list[str]:
    return [
        f"{path.relative_to(package)}: {len(path.read_text().splitlines())} lines"
        for path in sorted(package.rglob("*.py"))
        if len(path.read_text().splitlines()) > MAX_MODULE_LINES
    ]


def _imported_modules(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
    return names


def _test_to_test_imports(tests: Path) -> list[str]:
    offenders = []
    for path in sorted(tests.rglob("*.py")):
        for name in _imported_modules(path):
            last = name.split(".")[-1]
            if name.startswith("tests.") and (last.startswith("test_") or last == "conftest"):
                offenders.append(f"{path.relative_to(tests.parent)}: {name}")
    return offenders


def test_the_package_root_holds_at_most_8_modules() -> None:
    """The folders say what the package is made of; the root holds only what belongs to all of it."""
    assert len(_root_modules(PACKAGE)) <= MAX_ROOT_MODULES, _root_modules(PACKAGE)


def test_no_module_is_over_350_lines() -> None:
    """A module says one thing; one that grows past this says several, and is split by what it says."""
    assert _over_limits(PACKAGE) == []


def test_no_test_file_imports_from_another_test_file_or_a_conftest() -> None:
    """Shared builders live in a helpers module of each tier (and conftest fixtures, which pytest hands out)."""
    assert _test_to_test_imports(TESTS) == []


def test_the_shape_checks_catch_what_they_should(tmp_path: Path) -> None:
    package, tests = tmp_path / "pkg", tmp_path / "tests"
    (package / "sub").mkdir(parents=True)
    (tests / "unit").mkdir(parents=True)
    for i in range(MAX_ROOT_MODULES + 1):
        (package / f"m{i}.py").write_text("")
    (package / "sub" / "wide.py").write_text("x = 1  # " + "w" * 100_000 + "\n")  # wide, but one line: fine
    (package / "sub" / "long.py").write_text("x = 1\n" * (MAX_MODULE_LINES + 1))
    (tests / "unit" / "helpers.py").write_text("")
    (tests / "unit" / "test_a.py").write_text("from tests.unit.test_b import thing\nfrom tests.unit import helpers\n")
    (tests / "unit" / "test_c.py").write_text("import tests.integration.conftest\nfrom tests.unit.helpers import x\n")
    assert len(_root_modules(package)) == MAX_ROOT_MODULES + 1
    assert [line.split(":")[0] for line in _over_limits(package)] == ["sub/long.py"]
    assert _test_to_test_imports(tests) == [
        "tests/unit/test_a.py: tests.unit.test_b",
        "tests/unit/test_c.py: tests.integration.conftest",
    ]


def _unformatted(package: Path) -> list[str]:
    return [
        f"{path.relative_to(package)}:{number}"
        for path in sorted(package.rglob("*.py"))
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if re.search(r"#\s*fmt:\s*(skip|off)", line)
    ]


def test_the_formatter_formats_every_python_line_of_the_project(tmp_path: Path) -> None:
    """No line keeps its own shape against the formatter: a line too long for it is split by what it says."""
    for folder in ("airflow_async_stream", "tests", "bench", "dags", "scripts"):
        assert _unformatted(PACKAGE.parent / folder) == [], folder
    (tmp_path / "kept.py").write_text("x = [1,2]  # fmt" + ": skip\n")
    assert _unformatted(tmp_path) == ["kept.py:1"]


#: What starts the command line as a process: the console script's path, ``-m``, or ``main`` under ``-c``.
_STARTS_THE_CLI = re.compile(r'parent / "airflow-async-stream"|"airflow_async_stream\.cli"|import main; sys\.exit')


def test_one_unit_test_file_starts_the_command_line_as_a_process() -> None:
    """Unit tests call the CLI in-process (tests/unit/cli_run.py); a process costs a second of imports. Only
    tests/unit/cli/test_process.py starts one, and a stop run as from a second host (under ``unshare``)."""
    process = TESTS / "unit" / "cli" / "test_process.py"
    starting = []
    for path in sorted((TESTS / "unit").rglob("*.py")):
        text = path.read_text()
        if path in (process, Path(__file__)) or not _STARTS_THE_CLI.search(text):
            continue
        uses = re.findall(r"(.{0,16})\bCLI(?=[,)\]])", text)  # CLI as an argument
        if not uses or [use for use in uses if not use.endswith("_on_other_host(")]:
            starting.append(str(path.relative_to(TESTS.parent)))
    assert _STARTS_THE_CLI.search(process.read_text())
    assert starting == []
