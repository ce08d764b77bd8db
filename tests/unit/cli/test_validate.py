"""`validate --json`, and `--analyze` where it cannot run (the analysis on a real Spark: tests/integration/test_analyze.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from tests.helpers import rate_noop

CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([CLI, *args], capture_output=True, text=True, env={**os.environ, **(env or {})})


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "good.yaml").write_text(yaml.safe_dump(rate_noop("good", str(tmp_path / "ck" / "good"))))
    bad = rate_noop("bad", str(tmp_path / "ck" / "bad"), trigger={"processing_time": "2s"})
    (folder / "bad.yaml").write_text(yaml.safe_dump(bad))
    return folder


def test_json_gives_every_files_verdict_and_exit_2_when_one_is_wrong(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    result = cli("validate", "--json", str(folder), str(tmp_path / "empty-folder-that-is-a-missing-file.yaml"))
    assert result.returncode == 2
    report = json.loads(result.stdout)
    assert report["ok"] is False and report["spark"] is None
    verdicts = {Path(v["file"]).name: v for v in report["files"]}
    assert verdicts["good.yaml"]["ok"] and verdicts["good.yaml"]["job"] == "good"
    assert verdicts["bad.yaml"]["problems"][0]["field"] == "trigger.processing_time"
    assert verdicts["empty-folder-that-is-a-missing-file.yaml"]["problems"][0]["field"] == "(path)"


def test_analyze_without_java_exits_2_naming_what_is_missing_and_judges_no_spec(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "bad.yaml").unlink()
    result = cli("validate", "--analyze", str(folder), env={"JAVA_HOME": str(tmp_path / "no-jdk")})
    assert result.returncode == 2, result
    assert "Java 17+ is required" in result.stderr
    assert "ok (" not in result.stdout


def test_analyze_of_specs_that_fail_their_rules_starts_no_spark(tmp_path: Path) -> None:
    folder = _folder(tmp_path)
    (folder / "good.yaml").unlink()
    result = cli("validate", "--analyze", str(folder), env={"JAVA_HOME": str(tmp_path / "no-jdk")})
    assert result.returncode == 2  # the rules refused it; Java was never needed
    assert "trigger.processing_time" in result.stdout and "analyzing" not in result.stderr
