"""The analysis child as the parent sees it: verdicts as they come, and a child that fails or hangs (stand-in
children: the real one, on a real Spark, is tests/integration/test_analyze.py's)."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from airflow_async_stream.driver.analyze import AnalysisError, analyze_specs
from airflow_async_stream.spec.load import parse_spec
from tests.helpers import rate_noop


def _child(tmp_path: Path, body: str) -> list[str]:
    script = tmp_path / "child.py"
    script.write_text("import json, sys, time\nrequest = json.load(sys.stdin)\n" + textwrap.dedent(body))
    return [sys.executable, str(script)]


def _specs(tmp_path: Path, *names: str) -> list[tuple[str, object]]:
    return [(f"{name}.yaml", parse_spec(rate_noop(name, str(tmp_path / name)))) for name in names]


def test_verdicts_arrive_in_order_and_lines_not_ours_are_ignored(tmp_path: Path) -> None:
    child = _child(
        tmp_path,
        """
        print("an application's own print")
        print('@analysis {"ready": 4.5, "spark": "4.2.0"}', flush=True)
        for entry in request["specs"]:
            problems = [["transform.sql", "bad"]] if entry["spec"]["name"] == "b" else []
            print("@analysis " + json.dumps({"file": entry["file"], "problems": problems,
                  "not_checked": [], "seconds": 0.1}), flush=True)
        """,
    )
    seen = []
    run = analyze_specs(_specs(tmp_path, "a", "b"), on_analysis=seen.append, program=child)
    assert [a.file for a in seen] == ["a.yaml", "b.yaml"] == [a.file for a in run.analyses]
    assert [a.ok for a in run.analyses] == [True, False]
    assert run.analyses[1].to_json()["problems"] == [{"field": "transform.sql", "reason": "bad"}]
    assert (run.spark_start_seconds, run.spark_version) == (4.5, "4.2.0")


def test_a_child_that_dies_is_an_analysis_error_with_its_last_lines_not_a_verdict(tmp_path: Path) -> None:
    child = _child(tmp_path, 'print("java.lang.OutOfMemoryError: Java heap space", file=sys.stderr)\nsys.exit(3)\n')
    with pytest.raises(AnalysisError, match=r"exit code 3 after 0 of 1 specs:\njava.lang.OutOfMemoryError"):
        analyze_specs(_specs(tmp_path, "a"), program=child)


def test_a_child_that_stops_answering_is_stopped_at_the_timeout(tmp_path: Path) -> None:
    child = _child(tmp_path, 'print(\'@analysis {"ready": 1.0, "spark": "4.2.0"}\', flush=True)\ntime.sleep(600)\n')
    with pytest.raises(AnalysisError, match="did not finish in 2 s"):
        analyze_specs(_specs(tmp_path, "a"), timeout_s=2, program=child)


def test_no_java_is_said_before_any_child_starts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(Exception, match="Java 17\\+ is required"):
        analyze_specs(_specs(tmp_path, "a"), program=[sys.executable, "-c", "raise SystemExit('started')"])
