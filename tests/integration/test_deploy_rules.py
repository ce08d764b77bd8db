"""Deploy rules that need a real driver: one driver per checkpoint, stateful refusal, user code, submit args."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.analyze import analyze_specs
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.checkpoint import batch_ids
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.liveness import local_pid_alive
from tests.helpers import rate_noop
from tests.integration.helpers import DriverWatch, run_dag, task_states, write_job_dag, xcom

pytestmark = pytest.mark.integration


def _spec(checkpoint: str, **changes: object) -> dict:
    spec = rate_noop(
        "rules-job",
        checkpoint,
        rows=500,
        trigger={"processing_time": "300 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 0},
    )
    spec.update(changes)
    return spec


def _deploy_alone(dag_id: str, spec: dict, capfd: pytest.CaptureFixture[str]) -> tuple[Any, str]:
    """Run a DAG whose one task deploys ``spec``; return the run and everything it printed."""
    path = write_job_dag(
        dag_id,
        spec,
        """
            DeployStreamingJobOperator(task_id="deploy", spec=SPEC, startup_timeout_s=120)
        """,
    )
    dag_run = run_dag(path, dag_id)
    out = capfd.readouterr()
    return dag_run, out.out + out.err


def test_second_deploy_on_live_checkpoint_is_refused_and_redeploy_takes_over(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    path = write_job_dag(
        "one_driver_per_checkpoint",
        _spec(checkpoint_dir),
        """
            first = DeployStreamingJobOperator(task_id="first", spec=SPEC)

            @task
            def submitted_args(record: dict) -> list:
                pid = record["driver"]["launcher_pid"]
                return Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\\0")

            second = DeployStreamingJobOperator(task_id="second", spec=SPEC, startup_timeout_s=60)
            takeover = DeployStreamingJobOperator(
                task_id="takeover", spec=SPEC, redeploy=True, trigger_rule="all_done"
            )
            stop = StopStreamingJobOperator(task_id="stop", spec=SPEC, trigger_rule="all_done")
            args = submitted_args(first.output)
            first >> args >> second >> takeover >> stop
        """,
    )
    with DriverWatch(checkpoint_dir) as watch:
        dag_run = run_dag(path, "one_driver_per_checkpoint")
    out = capfd.readouterr()

    states = task_states(dag_run)
    assert states["first"] == "success" and states["submitted_args"] == "success"
    assert states["second"] == "failed"
    assert "already has a live driver" in out.out + out.err
    assert states["takeover"] == "success" and states["stop"] == "success"

    args = xcom(dag_run, "submitted_args")
    assert args[args.index("--async-progress-enabled") + 1] == "true"
    assert args[args.index("--async-progress-interval-ms") + 1] == "0"
    assert args[args.index("--master") + 1] == "local[*]"

    first, takeover = xcom(dag_run, "first"), xcom(dag_run, "takeover")
    assert first["deployment_id"] != takeover["deployment_id"]
    assert not local_pid_alive(first["driver"]["launcher_pid"]), "the first driver outlived the redeploy"
    # The takeover launched its driver only once the first one's process had exited: never two at once.
    assert len(watch.groups_seen) == 2 and watch.most_at_once == 1, (watch.groups_seen, watch.most_at_once)
    # The takeover resumed from the first driver's checkpoint instead of starting over.
    assert takeover["start_batch"] is not None and takeover["first_batch_id"] > takeover["start_batch"]
    assert ControlArea.for_checkpoint(checkpoint_dir).read_json("status.json")["state"] == "stopped"


def test_driver_refuses_stateful_query_with_async_before_start(airflow_db: None, checkpoint_dir: str, capfd) -> None:
    spec = _spec(checkpoint_dir, transform={"sql": "SELECT value % 10 AS k, count(*) AS n FROM source GROUP BY 1"})
    spec["sink"] = {"format": "console", "output_mode": "update"}
    dag_run, output = _deploy_alone("stateful_refused", spec, capfd)
    assert task_states(dag_run) == {"deploy": "failed"}
    assert "async_progress.enabled" in output
    assert "stateful operators: Aggregate" in output
    status = ControlArea.for_checkpoint(checkpoint_dir).read_json("status.json")
    assert status["state"] == "failed" and "Aggregate" in status["error"]
    assert batch_ids(checkpoint_dir, "offsets") == [], "Spark started the query anyway"
    # `validate --analyze` refuses the same spec before any deploy, in the driver's own words.
    [(field, reason)] = analyze_specs([("stateful.yaml", parse_spec(spec))]).analyses[0].problems
    assert f"{field}: {reason}" in status["error"]


def test_entrypoint_transform_runs_in_the_driver(
    airflow_db: None, checkpoint_dir: str, user_code_on_path: Path, tmp_path: Path
) -> None:
    output = tmp_path / "out"
    spec = _spec(
        checkpoint_dir,
        transform={"entrypoint": "user_jobs.transforms:evens"},
        sink={"format": "json", "options": {"path": str(output)}},
        async_progress={"enabled": False},
    )
    path = write_job_dag(
        "entrypoint_transform",
        spec,
        """
            deploy = DeployStreamingJobOperator(task_id="deploy", spec=SPEC)

            @task.sensor(poke_interval=1, timeout=120)
            def rows_written() -> bool:
                return any(p.stat().st_size for p in Path(SPEC["sink"]["options"]["path"]).glob("part-*.json"))

            deploy >> rows_written() >> StopStreamingJobOperator(task_id="stop", spec=SPEC)
        """,
    )
    dag_run = run_dag(path, "entrypoint_transform")

    assert task_states(dag_run) == {"deploy": "success", "rows_written": "success", "stop": "success"}
    rows = [json.loads(line) for part in output.glob("part-*.json") for line in part.read_text().splitlines()]
    assert rows
    assert all(row["value"] % 2 == 0 and row["tag"] == "from-entrypoint" for row in rows)


def test_existing_application_hands_its_writer_to_govern(
    airflow_db: None, checkpoint_dir: str, user_code_on_path: Path
) -> None:
    spec = _spec(checkpoint_dir, application=str(user_code_on_path / "existing_app.py"))
    del spec["source"], spec["sink"]
    path = write_job_dag(
        "existing_application",
        spec,
        """
            deploy = DeployStreamingJobOperator(task_id="deploy", spec=SPEC)

            @task.sensor(poke_interval=1, timeout=120)
            def two_commits() -> bool:
                return (latest_batch(SPEC["checkpoint"], "commits") or 0) >= 2

            deploy >> two_commits() >> StopStreamingJobOperator(task_id="stop", spec=SPEC)
        """,
    )
    dag_run = run_dag(path, "existing_application")

    assert task_states(dag_run) == {"deploy": "success", "two_commits": "success", "stop": "success"}
    control = ControlArea.for_checkpoint(checkpoint_dir)
    assert control.read_json("status.json")["state"] == "stopped"
    progress = control.read_progress()
    assert progress and max(e["num_input_rows"] for e in progress) > 0
    # The spec's interval 0 reached the application's writer: every batch it ran is in offsets/ and commits/.
    ran = {e["batch_id"] for e in progress}
    assert ran <= set(batch_ids(checkpoint_dir, "commits")) and ran <= set(batch_ids(checkpoint_dir, "offsets"))


def test_templated_spec_is_validated_again_before_submit(airflow_db: None, checkpoint_dir: str, capfd) -> None:
    spec = _spec(checkpoint_dir, async_progress={"enabled": True, "checkpoint_interval_ms": "{{ params.interval }}"})
    path = write_job_dag(
        "validated_before_submit",
        spec,
        """
            DeployStreamingJobOperator(task_id="deploy", spec=SPEC)
        """,
        dag_args='schedule=None, params={"interval": -1}, render_template_as_native_obj=True',
    )
    dag_run = run_dag(path, "validated_before_submit")
    out = capfd.readouterr()

    assert task_states(dag_run) == {"deploy": "failed"}
    assert "async_progress.checkpoint_interval_ms: Input should be greater than or equal to 0" in out.out + out.err
    assert not Path(checkpoint_dir + ".async-stream").exists(), "something was written before validation"


def test_shell_metacharacters_reach_spark_submit_as_plain_arguments(
    airflow_db: None, tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    """A checkpoint path full of shell syntax: no shell ever sees it, so nothing it says is executed."""
    from tests.session import CHECKPOINT_ROOT

    pwned = tmp_path / "pwned"
    checkpoint = str(CHECKPOINT_ROOT / f"ck $(touch {pwned}); `touch {pwned}` && echo x")
    spec = _spec(checkpoint, spark_conf={"spark.app.note": f"$(touch {pwned})"})
    path = write_job_dag(
        "shell_metacharacters",
        spec,
        """
            deploy = DeployStreamingJobOperator(task_id="deploy", spec=SPEC)

            @task
            def submitted_args(record: dict) -> list:
                return Path(f"/proc/{record['driver']['launcher_pid']}/cmdline").read_bytes().decode().split("\\0")

            deploy >> submitted_args(deploy.output) >> StopStreamingJobOperator(task_id="stop", spec=SPEC)
        """,
    )
    dag_run = run_dag(path, "shell_metacharacters")

    assert task_states(dag_run) == {"deploy": "success", "submitted_args": "success", "stop": "success"}
    args = xcom(dag_run, "submitted_args")
    assert args[args.index("--control-area") + 1] == checkpoint + ".async-stream"
    assert f"spark.app.note=$(touch {pwned})" in args
    assert not pwned.exists(), "a shell ran part of the path"
    assert batch_ids(checkpoint, "commits"), "the job did not run on that checkpoint"


def test_a_connection_that_cannot_be_read_fails_the_deploy_instead_of_running_locally(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_DEFAULT", "spark://user:hunter2-pw@spark-master:notaport")
    path = write_job_dag(
        "unreadable_connection",
        _spec(checkpoint_dir),
        """
            DeployStreamingJobOperator(task_id="deploy", spec=SPEC)
        """,
    )
    dag_run = run_dag(path, "unreadable_connection")
    out = capfd.readouterr()

    assert task_states(dag_run) == {"deploy": "failed"}
    assert "Airflow connection 'spark_default' could not be read" in out.out + out.err
    assert "hunter2-pw" not in out.out + out.err
    assert ControlArea.for_checkpoint(checkpoint_dir).read_json("deployment.json") is None, "a driver was launched"


def test_a_driver_that_dies_at_launch_shows_its_last_lines_through_the_log_pump(
    airflow_db: None, checkpoint_dir: str, capfd: pytest.CaptureFixture[str]
) -> None:
    spec = _spec(checkpoint_dir, spark_conf={"spark.driver.memory": "lots"})  # the JVM refuses to start
    dag_run, output = _deploy_alone("dies_at_launch", spec, capfd)
    assert task_states(dag_run) == {"deploy": "failed"}
    assert "exited before the query ran; end of its log:" in output
    assert "Invalid maximum heap size: -Xmxlots" in output  # the JVM's own last words
    record = ControlArea.for_checkpoint(checkpoint_dir).read_json("deployment.json")
    assert not local_pid_alive(record["driver"]["log_pump_pid"]), "the log pump outlived its driver"
