"""DAG files: a bad spec breaks the import with the field named; examples parse without pyspark."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from airflow.dag_processing.dagbag import DagBag

REPO = Path(__file__).resolve().parents[2]


def _import_errors(path: Path) -> dict[str, str]:
    return DagBag(dag_folder=str(path)).import_errors


def test_a_bad_spec_breaks_the_dag_import_with_the_reason(tmp_path: Path) -> None:
    path = tmp_path / "bad_dag.py"
    path.write_text(
        textwrap.dedent(
            """
            from airflow.sdk import dag
            from airflow_async_stream.operators import DeployStreamingJobOperator

            @dag(schedule=None)
            def bad():
                DeployStreamingJobOperator(task_id="deploy", spec={
                    "name": "bad", "checkpoint": "/ck/bad",
                    "source": {"format": "rate"}, "sink": {"format": "noop"},
                    "trigger": {"once": True}, "async_progress": {"enabled": True},
                })

            bad()
            """
        )
    )
    errors = _import_errors(path)
    assert list(errors) == [str(path)]
    assert "trigger.once: async progress tracking cannot be used with the once trigger" in errors[str(path)]


def test_a_templated_spec_is_judged_at_run_time_not_at_parse(tmp_path: Path) -> None:
    path = tmp_path / "templated_dag.py"
    path.write_text(
        textwrap.dedent(
            """
            from airflow.sdk import dag
            from airflow_async_stream.operators import DeployStreamingJobOperator

            @dag(schedule=None)
            def templated():
                DeployStreamingJobOperator(task_id="deploy", spec={
                    "name": "t", "checkpoint": "{{ params.root }}/t",
                    "source": {"format": "rate"}, "sink": {"format": "noop"},
                })

            templated()
            """
        )
    )
    assert _import_errors(path) == {}


def test_a_rollout_of_a_folder_naming_no_fleet_index_breaks_the_dag_import(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    folder.mkdir()
    path = tmp_path / "rollout_dag.py"
    path.write_text(f"from airflow_async_stream.factories import rollout_dag\nrollout_dag({str(folder)!r})\n")
    errors = _import_errors(path)
    assert list(errors) == [str(path)]
    assert "_fleet.yaml: (file): missing: a rollout keeps the index of the jobs it deployed" in errors[str(path)]

    (folder / "_fleet.yaml").write_text(f"index: {tmp_path / 'fleet-index'}\n")
    assert _import_errors(path) == {}


def test_a_rollout_dag_import_error_lists_every_problem_of_its_folder(tmp_path: Path) -> None:
    folder = tmp_path / "desired"
    folder.mkdir()
    job = {"source": {"format": "rate"}, "sink": {"format": "noop"}}
    (folder / "a.json").write_text(json.dumps({**job, "name": "a", "checkpoint": "/ck/a"}))
    (folder / "b.json").write_text(json.dumps({**job, "name": "a", "checkpoint": "/ck/b"}))
    (folder / "c.json").write_text(json.dumps({**job, "name": "c", "checkpoint": "/ck/c", "trigger": {"once": 3}}))
    (folder / "_fleet.yaml").write_text("indexx: /shared/index\n")
    path = tmp_path / "rollout_dag.py"
    path.write_text(f"from airflow_async_stream.factories import rollout_dag\nrollout_dag({str(folder)!r})\n")
    [error] = _import_errors(path).values()
    for needle in (
        "b.json: name: 'a' is also the job of a.json",
        "c.json: trigger.once:",
        "_fleet.yaml: indexx: unknown key",
        "_fleet.yaml: index: required",
    ):
        assert needle in error, (needle, error)


def test_example_dags_import_cleanly() -> None:
    bag = DagBag(dag_folder=str(REPO / "dags"))
    assert bag.import_errors == {}
    assert "example_deploy_stop" in bag.dag_ids


def test_example_dags_do_not_import_pyspark() -> None:
    code = (
        "import sys, runpy, glob\n"
        f"for f in sorted(glob.glob({str(REPO / 'dags' / '*.py')!r})): runpy.run_path(f)\n"
        "print('pyspark' in sys.modules)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip().splitlines()[-1] == "False"


def test_intervals_real_time_mode_and_option_values_spark_refuses_break_the_dag_import(tmp_path: Path) -> None:
    dag_file = textwrap.dedent(
        """
        from airflow.sdk import dag
        from airflow_async_stream.operators import DeployStreamingJobOperator

        @dag(schedule=None)
        def bad_{0}():
            DeployStreamingJobOperator(task_id="deploy", spec={{"name": "{0}", "checkpoint": "/ck/{0}", {1}}})

        bad_{0}()
        """
    )
    interval = tmp_path / "interval_dag.py"
    interval.write_text(
        dag_file.format(
            "interval", '"source": {"format": "rate"}, "sink": {"format": "noop"}, "trigger": {"processing_time": "2s"}'
        )
    )
    real_time = tmp_path / "real_time_dag.py"
    real_time.write_text(
        dag_file.format(
            "real_time",
            '"source": {"format": "rate", "options": {"rowsPerSecond": -3}}, '
            '"sink": {"format": "noop"}, "trigger": {"real_time": "5 seconds"}, '
            '"async_progress": {"enabled": True}',
        )
    )
    errors = _import_errors(interval)
    assert "trigger.processing_time: '2s' has a number glued" in errors[str(interval)]
    assert "Spark wants '2 seconds'" in errors[str(interval)]
    error = _import_errors(real_time)[str(real_time)]
    for field in (
        "source.options.rowsPerSecond: must be above 0",
        "trigger.real_time: Spark 4.2.0 refuses async",
        "source.format: source 'rate' has no real-time reads",
        "sink.output_mode: real-time mode needs",
        "sink.format: sink 'noop' is not in real-time mode's allow-list",
    ):
        assert field in error, (field, error)
