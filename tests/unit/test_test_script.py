"""scripts/test.sh, run for real over stand-ins for what it calls: which set-up steps each tier runs, and the
pytest it hands over to. (The set-up scripts and tools themselves run in CI, where .ci/run calls it.)"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
STEPS = ("setup.sh", "browser.sh", "services.sh", "stores.sh", "sparks.sh")
TOOLS = ("ruff", "mypy", "pytest", "python")


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of scripts/test.sh whose set-up scripts and tools only write their name (and arguments) to a log."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(REPO / "scripts" / "test.sh", tmp_path / "scripts" / "test.sh")
    for step in STEPS:
        (tmp_path / "scripts" / step).write_text(f'echo "{step}" >> "$(dirname "$0")/../calls"\n')
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    for tool in TOOLS:
        path = tmp_path / ".venv" / "bin" / tool
        path.write_text(f'#!/usr/bin/env bash\necho "{tool} $*" >> "$(dirname "$0")/../../calls"\n')
        path.chmod(0o755)
    return tmp_path


def calls(checkout: Path, *args: str) -> list[str]:
    run = subprocess.run(["bash", "scripts/test.sh", *args], cwd=checkout, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    return (checkout / "calls").read_text().splitlines()


def test_the_quick_tier_installs_no_browser_and_no_services(checkout: Path) -> None:
    made = calls(checkout, "--quick")
    assert [c for c in made if c in STEPS] == ["setup.sh"]
    assert not [c for c in made if c.startswith("python ")]  # its one smoke test writes Spark's class archive
    assert made[-1] == "pytest -m quick --durations=5"


def test_the_full_tier_sets_up_everything_it_needs(checkout: Path) -> None:
    made = calls(checkout)
    assert sorted(c for c in made if c in STEPS) == sorted(STEPS)  # stores.sh runs beside setup.sh
    assert made.index("setup.sh") < made.index("browser.sh") < made.index("services.sh")
    waited = ("setup.sh", "browser.sh", "services.sh", "stores.sh")  # sparks.sh installs while the tests run
    assert max(made.index(step) for step in waited) < made.index(next(c for c in made if c.startswith("pytest")))
    assert "python -m tests.spark_class_archive" in made  # written beside the set-up steps, before the tests
    assert "pytest -n 2 --dist loadfile --no-loadscope-reorder tests --durations=15" in made
