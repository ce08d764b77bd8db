"""Secrets from Airflow connections reach the job and nowhere else: logs, XCom, rendered templates,
the Airflow database, status/progress/log files, spark-submit's command line, CLI output.

Kafka: there is no broker and no Kafka connector jar on these machines, so the Kafka job fails in the
driver at `start()` (Spark cannot find the `kafka` source); everything up to that point is real and is
searched for the SASL password and the JAAS config built from it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea
from tests.helpers import rate_noop
from tests.integration.helpers import run_dag, task_states, write_dag, xcom

pytestmark = pytest.mark.integration

CLI = str(Path(sys.executable).parent / "airflow-async-stream")


def _every_file_under(*roots: Path) -> dict[str, str]:
    texts = {}
    for root in roots:
        for path in root.rglob("*"):
            if path.is_file():
                texts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    return texts


def _airflow_database_dump() -> str:
    db = Path(os.environ["AIRFLOW_HOME"]) / "airflow.db"
    with sqlite3.connect(db) as conn:
        return "\n".join(conn.iterdump())


def test_secret_options_reach_the_sink_and_appear_nowhere_else(
    airflow_db: None,
    checkpoint_dir: str,
    user_code_on_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capfd: pytest.CaptureFixture[str],
) -> None:
    token = f"tok-{uuid.uuid4().hex}"
    sasl_password = f"pw-{uuid.uuid4().hex}"
    monkeypatch.setenv("AIRFLOW_CONN_ECHO_TOKEN", json.dumps({"conn_type": "generic", "password": token}))
    monkeypatch.setenv(
        "AIRFLOW_CONN_KAFKA_TEST",
        json.dumps(
            {
                "conn_type": "generic",
                "host": "broker-1.invalid",
                "port": 9093,
                "login": "alerts-writer",
                "password": sasl_password,
                "extra": {"sasl.mechanism": "SCRAM-SHA-512"},
            }
        ),
    )
    proof_dir = tmp_path / "proof"
    echo_spec = {
        "name": "secret-echo",
        "checkpoint": checkpoint_dir,
        "application": str(user_code_on_path / "secret_echo_app.py"),
        "sink": {
            "format": "secret_echo",
            "options": {"proof_dir": str(proof_dir)},
            "secret_options": {"auth.token": "echo_token"},
        },
        "trigger": {"processing_time": "300 milliseconds"},
    }
    kafka_checkpoint = checkpoint_dir + "-kafka"
    kafka_spec = rate_noop(
        "kafka-alerts",
        kafka_checkpoint,
        rows=10,
        transform={"sql": "SELECT CAST(value AS STRING) AS value FROM source"},
        sink={"format": "kafka", "options": {"topic": "alerts"}, "connection": "kafka_test"},
        trigger={"processing_time": "1 second"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 1000},
        # No Maven here: skip the Kafka connector package, so the driver starts and fails at `start()`.
        spark_conf={"spark.jars.packages": ""},
    )
    path = write_dag(
        "secrets_everywhere",
        f"""
        from pathlib import Path
        from airflow.sdk import dag, task
        from airflow_async_stream.operators import DeployStreamingJobOperator, StopStreamingJobOperator

        ECHO = {echo_spec!r}

        @dag(schedule=None)
        def secrets_everywhere():
            deploy = DeployStreamingJobOperator(task_id="deploy", spec=ECHO)

            @task.sensor(poke_interval=1, timeout=120)
            def proof_written() -> bool:
                return len(list(Path(ECHO["sink"]["options"]["proof_dir"]).glob("*.sha256"))) >= 2

            @task
            def command_lines() -> list:
                '''Every running process's command line that mentions the job's control area.'''
                found = []
                for proc in Path("/proc").iterdir():
                    try:
                        line = (proc / "cmdline").read_bytes().replace(b"\\0", b" ").decode()
                    except OSError:
                        continue
                    if ECHO["checkpoint"] in line:
                        found.append(line)
                return found

            lines = command_lines()
            deploy >> proof_written() >> lines >> StopStreamingJobOperator(task_id="stop", spec=ECHO)
            DeployStreamingJobOperator(task_id="deploy_kafka", spec={kafka_spec!r}, startup_timeout_s=120)

        secrets_everywhere()
        """,
    )
    dag_run = run_dag(path, "secrets_everywhere")
    task_logs = capfd.readouterr()

    states = task_states(dag_run)
    assert states["deploy"] == states["proof_written"] == states["stop"] == "success", states
    assert states["deploy_kafka"] == "failed", "without a Kafka connector jar the Kafka job cannot start here"

    # Delivered: the sink saw exactly the connection's password.
    proofs = {p.read_text() for p in proof_dir.glob("*.sha256")}
    assert proofs == {hashlib.sha256(token.encode()).hexdigest()}
    record = xcom(dag_run, "deploy")
    assert record["secret_options"] == ["sink.options.auth.token"]
    command_lines = xcom(dag_run, "command_lines")
    assert any("driver.py" in line for line in command_lines), command_lines

    kafka_control = ControlArea.for_checkpoint(kafka_checkpoint)
    kafka_status = kafka_control.read_json(ControlArea.STATUS)
    assert kafka_status["state"] == "failed" and "kafka" in kafka_status["error"].lower()
    assert kafka_status["secret_options"] == [
        "sink.options.kafka.bootstrap.servers",
        "sink.options.kafka.sasl.jaas.config",
        "sink.options.kafka.sasl.mechanism",
        "sink.options.kafka.security.protocol",
    ]

    cli_output = "".join(
        subprocess.run([CLI, *args], capture_output=True, text=True, check=False).stdout
        for args in (
            ["status", checkpoint_dir],
            ["status", "--json", checkpoint_dir],
            ["status", "--json", kafka_checkpoint],
            ["inspect", "--json", checkpoint_dir],
        )
    )
    assert "secret-echo" in cli_output and "kafka-alerts" in cli_output  # the CLI did report on both jobs

    searched = {
        "task logs": task_logs.out + task_logs.err,
        "XCom and rendered templates (Airflow database)": _airflow_database_dump(),
        "process command lines": "\n".join(command_lines),
        "CLI output": cli_output,
        **_every_file_under(Path(checkpoint_dir + ".async-stream"), Path(kafka_checkpoint + ".async-stream")),
        **_every_file_under(Path(os.environ["AIRFLOW_HOME"]) / "logs"),
    }
    assert any("rendered_task_instance_fields" in text for text in searched.values())
    for secret in (token, sasl_password, "ScramLoginModule required"):
        leaked = [where for where, text in searched.items() if secret in text]
        assert not leaked, f"a secret appears in: {leaked}"
