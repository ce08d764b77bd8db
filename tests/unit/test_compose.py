"""docker-compose.yaml, checked for structure: there is no Docker engine on these machines to start it."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
AIRFLOW_SERVICES = ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer")


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load((REPO / "docker-compose.yaml").read_text())


def _env(service: dict[str, Any]) -> dict[str, str]:
    env = service.get("environment") or {}
    return {str(k): str(v) for k, v in env.items()}


def test_every_part_of_the_stack_is_there(compose: dict[str, Any]) -> None:
    services = compose["services"]
    assert set(AIRFLOW_SERVICES) | {"airflow-init", "postgres", "spark-master", "spark-worker", "kafka"} <= set(
        services
    )
    commands = {name: " ".join(services[name]["command"]) for name in AIRFLOW_SERVICES}
    assert commands == {
        "airflow-apiserver": "airflow api-server",
        "airflow-scheduler": "airflow scheduler",
        "airflow-dag-processor": "airflow dag-processor",
        "airflow-triggerer": "airflow triggerer",
    }


def test_images_are_pinned(compose: dict[str, Any]) -> None:
    for name, service in compose["services"].items():
        image = service.get("image")
        assert image, f"{name} names no image"
        repo, _, tag = image.rpartition(":")
        assert repo and tag and tag != "latest" and re.match(r"^\d", tag), f"{name}: {image} is not pinned"
    base = re.search(r"^FROM (\S+)", (REPO / "Dockerfile").read_text(), re.M)
    assert base and re.fullmatch(r"apache/airflow:3\.\d+\.\d+-python3\.\d+", base.group(1)), base


def test_the_airflow_image_is_this_provider_with_its_pinned_spark(compose: dict[str, Any]) -> None:
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "COPY --chown=airflow:root airflow_async_stream" in dockerfile and "pip install" in dockerfile
    assert "openjdk-17" in dockerfile, "drivers run beside the scheduler and need Java 17"
    built = compose["services"]["airflow-scheduler"]["image"]
    for name in ("spark-master", "spark-worker"):
        assert compose["services"][name]["image"] == built, f"{name} must run the same Spark as the drivers"
    assert "pyspark==4.2.0" in (REPO / "pyproject.toml").read_text()


def test_dags_and_checkpoints_are_mounted_where_they_are_used(compose: dict[str, Any]) -> None:
    services = compose["services"]
    declared = set(compose["volumes"])
    for name, service in services.items():
        for volume in service.get("volumes", []):
            source = volume.split(":")[0]
            if not source.startswith("."):
                assert source in declared, f"{name} mounts undeclared volume {source}"
            else:
                assert (REPO / source).exists(), f"{name} mounts missing {source}"
    for name in (*AIRFLOW_SERVICES, "spark-master", "spark-worker"):
        mounts = services[name]["volumes"]
        assert "checkpoints:/data/checkpoints" in mounts, f"{name} does not see the checkpoints"
    for name in AIRFLOW_SERVICES:
        assert "./dags:/opt/airflow/dags" in services[name]["volumes"]
        assert _env(services[name])["ASYNC_STREAM_DEMO_ROOT"] == "/data/checkpoints"


def test_ports_do_not_collide(compose: dict[str, Any]) -> None:
    published = [p.split(":")[0] for s in compose["services"].values() for p in s.get("ports", [])]
    assert len(published) == len(set(published)), published
    assert "8080" in published


def test_the_spark_connection_points_at_the_master(compose: dict[str, Any]) -> None:
    services = compose["services"]
    master_cmd = " ".join(services["spark-master"]["command"])
    match = re.search(r"deploy\.master\.Master --host (\S+) --port (\d+)", master_cmd)
    assert match, master_cmd
    master_url = f"spark://{match.group(1)}:{match.group(2)}"
    assert match.group(1) == "spark-master"
    for name in AIRFLOW_SERVICES:
        assert _env(services[name])["AIRFLOW_CONN_SPARK_DEFAULT"] == master_url, name
    assert " ".join(services["spark-worker"]["command"]).endswith(master_url)


def test_kafka_runs_in_kraft_mode(compose: dict[str, Any]) -> None:
    env = _env(compose["services"]["kafka"])
    assert set(env["KAFKA_PROCESS_ROLES"].split(",")) == {"broker", "controller"}
    assert env["KAFKA_CONTROLLER_QUORUM_VOTERS"] == f"{env['KAFKA_NODE_ID']}@kafka:9093"
    assert "zookeeper" not in yaml.safe_dump(compose).lower()
    kafka_conn = _env(compose["services"]["airflow-scheduler"])["AIRFLOW_CONN_KAFKA_DEFAULT"]
    assert '"host": "kafka", "port": 9092' in kafka_conn and "password" not in kafka_conn


def test_the_api_server_shows_the_jobs_on_the_shared_volume(compose: dict[str, Any]) -> None:
    """The Streaming jobs page reads the same volume and fleet index the workers write."""
    api = compose["services"]["airflow-apiserver"]
    env = _env(api)
    fleet = yaml.safe_load((REPO / "dags" / "desired" / "_fleet.yaml").read_text())["index"]
    index = fleet.replace("${ASYNC_STREAM_DEMO_ROOT:-/tmp/airflow-async-stream-demo}", env["ASYNC_STREAM_DEMO_ROOT"])
    assert env["AIRFLOW__ASYNC_STREAM__FLEET_INDEXES"] == index
    assert env["AIRFLOW__ASYNC_STREAM__CHECKPOINT_FOLDERS"] == env["ASYNC_STREAM_DEMO_ROOT"]
    assert any(v.endswith(":" + env["ASYNC_STREAM_DEMO_ROOT"]) for v in api["volumes"])
