"""The README's "Install into your Airflow", walked as a newcomer walks it: a fresh venv, pip install of this
checkout, a new AIRFLOW_HOME and DAG folder, the README's spec and first DAG, then each command of the guide
as written. Nothing of the test session's set-up reaches it (no .venv, no registry, no Spark settings)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.readme_blocks import BLOCKS, DAG_FOLDER, FULL_SPEC_NAME, full_spec
from tests.session import REPO

pytestmark = pytest.mark.integration

#: Where the guide's commands say the checkout is.
CHECKOUT = "/path/to/airflow-async-stream"
#: What a newcomer's shell carries from this machine: the PATH (Java), pip's own settings, the locale.
_KEPT = ("PATH", "LANG", "LC_ALL", "JAVA_HOME", "TMPDIR")


def _shell(tmp_path: Path, venv: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _KEPT or k.startswith("PIP_")}
    return env | {
        "PATH": f"{venv / 'bin'}{os.pathsep}{env['PATH']}",
        "VIRTUAL_ENV": str(venv),
        "AIRFLOW_HOME": str(tmp_path / "airflow"),
        "AIRFLOW__CORE__DAGS_FOLDER": str(tmp_path / "dags"),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
    }


def _run(line: str, env: dict[str, str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    command = line.split("   #", 1)[0].replace(CHECKOUT, str(tmp_path / "checkout"))
    command = command.replace(DAG_FOLDER, str(tmp_path / "dags"))
    started = time.monotonic()
    result = subprocess.run(["bash", "-c", command], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900)
    print(f"{time.monotonic() - started:6.1f} s  {command}")
    return result


def test_the_install_guide_works_from_a_fresh_venv(tmp_path: Path) -> None:
    [block] = [b for b in BLOCKS if b.kind == "install"]
    lines = [line for line in block.body.splitlines() if line.strip()]
    assert lines[0].startswith("pip install ") and lines[1] == "airflow db migrate"
    started = time.monotonic()
    # A checkout as a clone has it: no .venv, no build/ of an earlier pip install, no var/.
    litter = shutil.ignore_patterns(
        ".git",
        ".venv",
        ".node",
        "var",
        "build",
        "dist",
        "*.egg-info",
        "test-output",
        "__pycache__",
        ".pytest_cache",
        ".ruff_cache",
    )
    shutil.copytree(REPO, tmp_path / "checkout", ignore=litter)
    subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "venv")], check=True)
    env = _shell(tmp_path, tmp_path / "venv")
    pip_env = env | {"HOME": os.environ["HOME"]}  # pip's own config and cache, as on the newcomer's machine
    # Installed files as the guide's line installs them, without byte-compiling each one (35 of pip's 112 s
    # here): the guide's few commands compile what they import (at each start where PYTHONDONTWRITEBYTECODE
    # is set, as here); the walk 158 -> 134 s.
    pip_env["PIP_COMPILE"] = "0"  # pip reads PIP_NO_COMPILE=1 as --compile
    installed = _run(lines[0], pip_env, tmp_path)
    assert installed.returncode == 0, installed.stderr[-3000:]
    env["HOME"] = str(tmp_path / "home")  # the Airflow host: nothing of this machine's earlier jobs
    Path(env["HOME"]).mkdir()

    # Step 4: the spec with its checkpoint changed, and the first DAG beside it.
    specs = tmp_path / "dags" / "specs"
    specs.mkdir(parents=True)
    spec = full_spec()
    checkpoint = str(tmp_path / "checkpoints" / FULL_SPEC_NAME)
    (specs / f"{FULL_SPEC_NAME}.yaml").write_text(spec.replace(yaml.safe_load(spec)["checkpoint"], checkpoint))
    [dag] = [b for b in BLOCKS if b.kind == "dags" and b.arg == "clicks"]
    (tmp_path / "dags" / "clicks.py").write_text(dag.body.replace(DAG_FOLDER, str(tmp_path / "dags")))

    results = {}
    for line in lines[1:]:
        results[line] = result = _run(line, env, tmp_path)
        assert result.returncode == 0, (line, result.stdout[-2000:], result.stderr[-3000:])
    took = time.monotonic() - started
    print(f"the guide from a fresh venv: {took:.0f} s")

    validated, listed, stopped = (results[line] for line in lines[2:3] + lines[4:6])
    assert f"ok ({FULL_SPEC_NAME}, async progress on)" in validated.stdout
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(FULL_SPEC_NAME)]
    assert "running" in row and "on, interval 1000 ms" in row, listed.stdout
    assert stopped.stdout.startswith("stopped"), stopped.stdout
    assert (tmp_path / "home" / ".airflow-async-stream" / "jobs" / f"{FULL_SPEC_NAME}.json").is_file()
    assert Path(f"{checkpoint}.async-stream").is_dir() and (Path(checkpoint) / "commits").is_dir()


#: A pyspark and pyspark-client pair a user already has that is not the `spark` extra's 4.2.0.
USERS_PYSPARK = "4.1.3"


def test_installing_the_provider_keeps_the_users_pyspark(tmp_path: Path) -> None:
    """pip's plan for the guide's install (without the `spark` extra) beside the user's own PySpark pair, asked
    of pip's resolver in this venv (a dry run): it keeps 4.1.3 (an exact pin made pip swap a user's pyspark for
    4.2.0 without a word, and refuse outright beside one asked for explicitly: ResolutionImpossible)."""
    report = tmp_path / "report.json"
    users = [f"pyspark=={USERS_PYSPARK}", f"pyspark-client=={USERS_PYSPARK}"]
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--dry-run",
        "--report",
        str(report),
        *users,
        f"{REPO}[openlineage,chart]",
    ]
    planned = subprocess.run(command, capture_output=True, text=True, timeout=900)
    assert planned.returncode == 0, planned.stderr[-3000:]
    installs = {
        item["metadata"]["name"].lower(): item["metadata"]["version"]
        for item in json.loads(report.read_text())["install"]
    }
    assert installs.get("airflow-async-stream") == "0.1.0", installs
    assert (installs.get("pyspark"), installs.get("pyspark-client")) == (USERS_PYSPARK, USERS_PYSPARK), installs
