"""`validate --json`, and `--analyze` where it cannot run (the analysis on a real Spark: tests/integration/test_analyze.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tests.helpers import rate_noop
from tests.unit.cli_run import cli


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


def test_a_spec_that_delegates_async_says_so(tmp_path: Path) -> None:
    spec = rate_noop(
        "tuned", str(tmp_path / "ck"), async_progress={"enabled": "auto", "checkpoint_interval_ms": "auto"}
    )
    (tmp_path / "tuned.yaml").write_text(yaml.safe_dump(spec))
    result = cli("validate", str(tmp_path / "tuned.yaml"))
    assert result.returncode == 0, result.stderr
    said = "ok (tuned, async progress off, enabled and checkpoint_interval_ms set by the tuner (auto))"
    assert said in result.stdout
    verdict = json.loads(cli("validate", "--json", str(tmp_path / "tuned.yaml")).stdout)["files"][0]
    assert verdict["auto"] == ["enabled", "checkpoint_interval_ms"] and verdict["async_progress"] is False


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


def test_the_analyze_summary_counts_files_and_analyses_apart() -> None:
    """A folder of six specs, five refused by their rules, read "1 analyzed ...: 0 ok, 5 wrong"."""
    from types import SimpleNamespace

    from airflow_async_stream.cli.validate import summary

    run = SimpleNamespace(seconds=3.21, spark_version="4.2.0", spark_start_seconds=2.5)
    assert summary(6, 5, 1, run) == (
        "6 files: 1 ok, 5 wrong; 1 analyzed in 3.2 s (Spark 4.2.0 started in 2.5 s), 5 refused before it"
    )
    assert summary(1, 0, 1, run) == "1 file: 1 ok, 0 wrong; 1 analyzed in 3.2 s (Spark 4.2.0 started in 2.5 s)"


def test_plan_text_gives_each_analyzed_change_its_verdict(capsys: pytest.CaptureFixture[str]) -> None:
    """`plan --analyze` showed a verdict only in --json: a change analyzed ok said nothing in the text."""
    from airflow_async_stream.cli.commands import _print_plan
    from airflow_async_stream.rollout.item import PlanItem

    ok = {"ok": True, "seconds": 0.42, "problems": [], "not_checked": [], "file": "a.yaml"}
    wrong = {
        "ok": False,
        "seconds": 0.3,
        "problems": [{"field": "transform.sql", "reason": "no column x"}],
        "not_checked": [],
        "file": "b.yaml",
    }
    _print_plan(
        [
            PlanItem("a", "deploy", "new", analysis=ok),
            PlanItem("b", "deploy", "new", analysis=wrong),
            PlanItem("c", "unchanged", "as desired"),
        ]
    )
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].strip() == "analysis: ok (0.42 s)"
    assert lines[3].strip() == "analysis: transform.sql: no column x"
    assert lines[-1] == "analysis: 2 changes analyzed, 1 ok, 1 wrong"


def test_validate_checkpoint_refuses_what_a_deploy_refuses_and_writes_nothing(tmp_path: Path) -> None:
    """`validate` said ok for a synchronous spec over a checkpoint with async gaps, which every deploy refuses."""
    from tests.helpers import snapshot
    from tests.unit.helpers import gapped_checkpoint, write_spec

    gapped_checkpoint(tmp_path / "ck-gaps")
    specs = tmp_path / "specs"
    write_spec(specs, "sync.yaml", rate_noop("sync-job", checkpoint=str(tmp_path / "ck-gaps")))
    write_spec(
        specs,
        "async.yaml",
        rate_noop("async-job", checkpoint=str(tmp_path / "ck-gaps"), async_progress={"enabled": True}),
    )
    write_spec(specs, "fresh.yaml", rate_noop("fresh-job", checkpoint=str(tmp_path / "ck-none")))
    assert cli("validate", str(specs)).returncode == 0  # the spec alone is right
    before = snapshot(tmp_path / "ck-gaps")
    result = cli("validate", "--checkpoint", str(specs))
    assert snapshot(tmp_path / "ck-gaps") == before
    assert result.returncode == 2, result
    lines = result.stdout.splitlines()
    assert lines[0].startswith(
        f"{specs / 'sync.yaml'}: checkpoint: a synchronous deploy is refused: offsets/6 is missing"
    )
    assert "safe-disable migration" in lines[0]
    assert f"{specs / 'async.yaml'}: ok (async-job, async progress on)" in lines
    assert f"{specs / 'fresh.yaml'}: ok (fresh-job, async progress off)" in lines
    data = json.loads(cli("validate", "--checkpoint", "--json", str(specs)).stdout)
    assert [f["ok"] for f in data["files"]] == [True, True, False]  # async, fresh, sync (the folder's order)


def test_validate_and_plan_judge_for_the_spark_named_and_say_which(tmp_path: Path) -> None:
    """A real-time job: fine for 4.2 (the installed pyspark), refused for 3.5, whose PySpark has no real time."""
    folder = tmp_path / "desired"
    folder.mkdir()
    spec = rate_noop(
        "fast",
        str(tmp_path / "ck" / "fast"),
        source={"format": "kafka", "options": {"subscribe": "t", "kafka.bootstrap.servers": "127.0.0.1:9"}},
        sink={"format": "console", "output_mode": "update"},
        trigger={"real_time": "5 seconds"},
    )
    (folder / "fast.yaml").write_text(yaml.safe_dump(spec))
    fine = cli("validate", str(folder), env={"AIRFLOW_ASYNC_STREAM_SPARK_VERSION": ""})
    assert fine.returncode == 0, fine.stdout + fine.stderr
    assert fine.stdout.splitlines()[-1].startswith("judged for Spark 4.2.0 (the installed pyspark); a deploy judges")
    for args, env in [(["--spark-version", "3.5.9"], {}), ([], {"AIRFLOW_ASYNC_STREAM_SPARK_VERSION": "3.5.9"})]:
        refused = cli("validate", *args, str(folder), env=env)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        said = "fast.yaml: trigger.real_time: Spark 3.5.9 has no real-time mode in PySpark"
        assert said in refused.stdout and not refused.stderr  # the finding names the Spark it was judged for
    fine_on_43 = cli("validate", "--spark-version", "4.3.0", str(folder))
    assert fine_on_43.stdout.splitlines()[-1].startswith("judged for Spark 4.3.0 (--spark-version)"), fine_on_43
    as_json = json.loads(cli("validate", "--json", "--spark-version", "4.3.0", str(folder)).stdout)
    assert as_json["judged_for"] == "Spark 4.3.0 (--spark-version)" and as_json["ok"]
    planned = cli("plan", "--spark-version", "3.5.9", str(folder), env={"AIRFLOW_ASYNC_STREAM_HOME": str(tmp_path)})
    assert "trigger.real_time: Spark 3.5.9 has no real-time mode" in planned.stdout, planned.stdout + planned.stderr
    unknown = cli("validate", "--spark-version", "3.4.4", str(folder))
    assert unknown.returncode == 2
    assert (
        "--spark-version: Spark 3.4.4 is not a line this release supports (3.5, 4.0, 4.1, 4.2, 4.3)" in unknown.stderr
    )
