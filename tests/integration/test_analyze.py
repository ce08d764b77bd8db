"""`validate --analyze` on a real local Spark: each mistake in its own spec file, named for the field it is on,
all in one folder and one JVM start; what this host cannot reach is noted, never failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.helpers import rate_noop
from tests.integration.helpers import USER_CODE

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "airflow-async-stream")
COUNT = "SELECT value % 2 AS k, count(*) AS n FROM source GROUP BY value % 2"
REAL_TIME = {"sink": {"format": "console", "output_mode": "update"}, "trigger": {"real_time": "5 seconds"}}
KAFKA = {"format": "kafka", "options": {"kafka.bootstrap.servers": "broker:9092", "subscribe": "events"}}

#: file name (the field it is wrong on, and how) -> the spec's changes to the rate -> noop job.
WRONG: dict[str, dict[str, Any]] = {
    "transform.sql-syntax": {"transform": {"sql": "SELEC value FRM source"}},
    "transform.sql-column": {"transform": {"sql": "SELECT valeu FROM source"}},
    "transform.sql-table": {"transform": {"sql": "SELECT value FROM sauce"}},
    "transform.sql-types": {"transform": {"sql": "SELECT value + array(1) AS v FROM source"}},
    "transform.sql-kafka-column": {
        "source": KAFKA,
        "transform": {"sql": "SELECT CAST(value AS STRING), valeu FROM source"},
    },
    "transform.entrypoint-column": {"transform": {"entrypoint": "user_jobs.transforms:misnamed"}},
    "async_progress.enabled-stateful": {
        "transform": {"sql": COUNT},
        "sink": {"format": "noop", "output_mode": "update"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 0},
    },
    "async_progress.enabled-stateful-application": {
        "application": str(USER_CODE / "stateful_app.py"),
        "async_progress": {"enabled": True},
    },
    "application-starting-its-own-query": {"application": str(USER_CODE / "self_starting_app.py")},
    "sink.output_mode-aggregation-in-append": {"transform": {"sql": COUNT}},
    "trigger.continuous-aggregation": {
        "transform": {"sql": COUNT},
        "sink": {"format": "noop", "output_mode": "update"},
        "trigger": {"continuous": "1 second"},
    },
    "source.format-typo": {"source": {"format": "rat"}},
    "source.schema-type": {"source": {"format": "json", "schema": "a innt", "options": {"path": str(USER_CODE)}}},
    "source.options.port-missing": {"source": {"format": "socket", "options": {"host": "localhost"}}},
    "source.options.maxFilesPerTrigger-negative": {
        "source": {"format": "json", "schema": "a INT", "options": {"path": "hdfs://nn/in", "maxFilesPerTrigger": -1}}
    },
    "source.options.cleanSource-unknown": {
        "source": {"format": "json", "schema": "a INT", "options": {"path": str(USER_CODE), "cleanSource": "shred"}}
    },
    "trigger.real_time-aggregation-in-an-entrypoint": {
        "source": KAFKA,
        "transform": {"entrypoint": "user_jobs.transforms:counts"},
        **REAL_TIME,
    },
    "spark_conf.spark.sql.shuffle.partitions-not-a-number": {"spark_conf": {"spark.sql.shuffle.partitions": "many"}},
}
#: What Spark says, in part, for each (the stateful ones: the driver's own words, runtime/query.py).
SAID = {
    "transform.sql-syntax": "Syntax error at or near 'SELEC'. (line 1, pos 0) (Spark: PARSE_SYNTAX_ERROR)",
    "transform.sql-column": "name `valeu` cannot be resolved",
    "transform.sql-table": "The table or view `sauce` cannot be found",
    "transform.sql-types": "(Spark: DATATYPE_MISMATCH.BINARY_OP_DIFF_TYPES)",
    "transform.sql-kafka-column": "`partition`",  # a column of the Kafka source's, suggested
    "transform.entrypoint-column": "name `valeu` cannot be resolved",
    "async_progress.enabled-stateful": "this query's plan has stateful operators: Aggregate",
    "async_progress.enabled-stateful-application": "this query's plan has stateful operators: Aggregate",
    "sink.output_mode-aggregation-in-append": "Invalid streaming output mode: append",
    "application-starting-its-own-query": "starts its query itself (DataStreamWriter.start or toTable): hand the "
    "writer to airflow_async_stream.runtime.govern(writer)",
    "trigger.continuous-aggregation": "Continuous processing does not support Aggregate operations",
    "source.format-typo": "Spark has no data source 'rat'; did you mean 'rate'?",
    "source.schema-type": 'Unsupported data type "INNT"',
    "source.options.port-missing": 'Set a port to read from with option("port", ...)',
    "spark_conf.spark.sql.shuffle.partitions-not-a-number": "(Spark: INVALID_CONF_VALUE.TYPE_MISMATCH)",
    "trigger.real_time-aggregation-in-an-entrypoint": "real-time mode runs only the operators on Spark's "
    "allow-list (no aggregation, sort, shuffle, window or limit), and this query's plan has: Aggregate",
    "source.options.maxFilesPerTrigger-negative": "Invalid value '-1' for option 'maxFilesPerTrigger', must be a "
    "positive integer",
    "source.options.cleanSource-unknown": "Invalid mode for clean source option Some(shred). Must be one of",
}
#: A spec wrong in two ways: both are said at once.
TWICE = {"transform": {"sql": COUNT}, "spark_conf": {"spark.sql.shuffle.partitions": "many"}}
RIGHT: dict[str, dict[str, Any]] = {
    "sql": {"transform": {"sql": "SELECT value * 2 AS doubled FROM source WHERE value % 3 = 0"}},
    "aggregation-without-async": {"transform": {"sql": COUNT}, "sink": {"format": "noop", "output_mode": "complete"}},
    "entrypoint": {"transform": {"entrypoint": "user_jobs.transforms:evens"}},
    "application": {"application": str(USER_CODE / "existing_app.py"), "async_progress": {"enabled": True}},
    "kafka": {"source": KAFKA, "transform": {"sql": "SELECT CAST(value AS STRING) AS v FROM source"}},
    "cluster-path": {"source": {"format": "json", "schema": "a INT", "options": {"path": "hdfs://nn:8020/in"}}},
    "real-time": {
        "source": KAFKA,
        "transform": {"sql": "SELECT key, value FROM source WHERE key IS NOT NULL"},
        **REAL_TIME,
    },
    "cluster-module": {"transform": {"entrypoint": "jobs_shipped_to_the_cluster.transforms:build"}},
}


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(USER_CODE)}  # where the entrypoints' modules are, as for a driver
    return subprocess.run([CLI, *args], capture_output=True, text=True, env=env, timeout=300)


def _write(folder: Path, name: str, changes: dict[str, Any]) -> None:
    spec = rate_noop(name.replace(".", "-").replace("_", "-").lower()[:63], str(folder.parent / "ck" / name), **changes)
    if "application" in changes:
        del spec["source"], spec["sink"]
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(spec))


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """One `validate --analyze --json` over a folder of every case above: one Spark for all of them."""
    folder = tmp_path_factory.mktemp("analyze") / "desired"
    folder.mkdir()
    for name, changes in {**WRONG, **RIGHT, "twice": TWICE}.items():
        _write(folder, name, changes)
    result = _cli("validate", "--analyze", "--json", str(folder))
    report = json.loads(result.stdout)
    return result, {Path(v["file"]).stem: v for v in report["files"]} | {"(run)": report}


@pytest.mark.parametrize("name", sorted(WRONG))
def test_each_mistake_is_refused_on_its_field_with_sparks_words(analyzed: Any, name: str) -> None:
    verdict = analyzed[1][name]
    assert not verdict["ok"]
    field = name.split("-")[0]
    assert [p["field"] for p in verdict["problems"]] == [field], verdict
    assert SAID[name] in verdict["problems"][0]["reason"]


def test_a_spec_wrong_twice_hears_of_both_at_once(analyzed: Any) -> None:
    fields = [p["field"] for p in analyzed[1]["twice"]["problems"]]
    assert fields == ["spark_conf.spark.sql.shuffle.partitions", "sink.output_mode"]


def test_an_application_that_starts_its_own_query_is_refused_before_it_runs(analyzed: Any) -> None:
    assert not (USER_CODE / "self_starting_app.py.checkpoint").exists()  # nothing started, nothing written


def test_right_specs_pass_and_what_is_out_of_reach_is_noted_not_failed(analyzed: Any) -> None:
    verdicts = analyzed[1]
    for name in RIGHT:
        assert verdicts[name]["ok"], verdicts[name]
    assert verdicts["kafka"]["not_checked"] == [
        "source: this host's Spark has no Kafka connector, so its Kafka options were not checked; the transform "
        "was checked over an empty source with the Kafka source's columns"
    ]
    assert (
        "hdfs://nn:8020/in is on a filesystem (hdfs) this host does not read"
        in verdicts["cluster-path"]["not_checked"][0]
    )
    assert verdicts["cluster-module"]["not_checked"] == [
        "transform.entrypoint: module 'jobs_shipped_to_the_cluster.transforms' is not importable here (the current "
        "folder and PYTHONPATH), so the transform was not checked"
    ]
    assert all(not verdicts[name]["not_checked"] for name in ("sql", "entrypoint", "application"))


def test_a_folder_mixing_good_and_bad_exits_2_after_one_spark_start(analyzed: Any) -> None:
    result, verdicts = analyzed
    assert result.returncode == 2, result.stderr[-2000:]
    run = verdicts["(run)"]
    assert run["ok"] is False and len(run["files"]) == len(WRONG) + len(RIGHT) + 1
    assert run["spark"]["version"] == "4.2.0" and run["spark"]["start_seconds"] > 0
    assert result.stderr.count("analyzing") == 1


def test_text_output_gives_a_line_per_problem_and_note_and_exit_0_when_all_are_right(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    folder.mkdir()
    _write(folder, "kafka", RIGHT["kafka"])
    _write(folder, "sql", RIGHT["sql"])
    result = _cli("validate", "--analyze", str(folder))
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
    lines = result.stdout.splitlines()
    assert (
        lines[0] == f"{folder / 'kafka.yaml'}: not checked: source: this host's Spark has no Kafka connector, so its "
        "Kafka options were not checked; the transform was checked over an empty source with the Kafka source's columns"
    )
    assert lines[1].startswith(f"{folder / 'kafka.yaml'}: ok (kafka, async progress off; analyzed in ")
    assert lines[2].startswith(f"{folder / 'sql.yaml'}: ok (sql, async progress off; analyzed in ")
    assert lines[3].startswith("2 files: 2 ok, 0 wrong; 2 analyzed in ") and lines[3].endswith(" s)")


def test_plan_with_analyze_carries_each_changes_verdict_and_exits_2_on_a_wrong_one(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    folder.mkdir()
    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'fleet-index'}\n")
    _write(folder, "kafka", RIGHT["kafka"])
    _write(folder, "transform.sql-column", WRONG["transform.sql-column"])
    result = _cli("plan", "--analyze", "--json", str(folder))
    assert result.returncode == 2, result.stdout + result.stderr[-2000:]
    items = {item["job"]: item for item in json.loads(result.stdout)}
    assert {job: item["action"] for job, item in items.items()} == {"kafka": "deploy", "transform-sql-column": "deploy"}
    assert items["kafka"]["analysis"]["ok"] and "no Kafka connector" in items["kafka"]["analysis"]["not_checked"][0]
    wrong = items["transform-sql-column"]["analysis"]
    assert not wrong["ok"] and wrong["problems"][0]["field"] == "transform.sql"
    assert wrong["file"] == str(folder / "transform.sql-column.yaml")

    text = _cli("plan", "--analyze", str(folder))
    assert text.returncode == 2
    lines = text.stdout.splitlines()
    assert (
        lines[lines.index(next(x for x in lines if x.startswith("transform-sql-column"))) + 1]
        .strip()
        .startswith(
            "analysis: transform.sql: A column, variable, or function parameter with name `valeu` cannot be resolved"
        )
    )
    assert any(x.strip().startswith("not checked: source: this host's Spark has no Kafka connector") for x in lines)
    kafka = lines.index(next(x for x in lines if x.startswith("kafka ")))
    assert any(x.strip().startswith("analysis: ok (") for x in lines[kafka + 1 : kafka + 4]), lines  # its verdict
    assert lines[-2] == "analysis: 2 changes analyzed, 1 ok, 1 wrong"
    assert lines[-1] == "1 problem(s) found by analysis: a rollout with analyze=True would change no job"
