"""Targets chosen by the Airflow Spark connection: command lines, refusals, status and kill calls.

There is no YARN or Kubernetes cluster on these machines: the YARN and Kubernetes tests here run a stub
`spark-submit` (and a stub `yarn` CLI, a fake Kubernetes client) that record what they were called with,
and print what the real ones print on submission. The standalone target runs for real in
tests/integration/test_standalone_cluster.py.
"""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.driver.bundle import runtime_bundle
from airflow_async_stream.driver.launcher import Submission
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.process import Target
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import DeployError, NotSignalledError
from airflow_async_stream.hooks.cluster import ClusterLauncher
from airflow_async_stream.hooks.launchers import launcher_for
from airflow_async_stream.hooks.spark_stream import StreamingJobHook
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver
from tests.helpers import rate_noop
from tests.unit.cli_run import cli
from tests.unit.hooks.cluster_stubs import calls as _calls
from tests.unit.hooks.cluster_stubs import connection as _connection
from tests.unit.hooks.cluster_stubs import stub as _stub

SPEC = rate_noop("clicks", "hdfs://nn:8020/ck/clicks", async_progress={"enabled": True, "checkpoint_interval_ms": 0})


class _Ended(LocalLauncher):
    """A cluster launcher stand-in whose cluster says every driver ended, and that records its kills."""

    def __init__(self) -> None:
        super().__init__()
        self.killed: list[dict[str, Any]] = []

    def ended(self, driver: dict[str, Any]) -> str | None:
        return "the driver ended on its cluster (FAILED)"

    def kill(self, driver: dict[str, Any], target: Target) -> str:
        self.killed.append(driver)
        return "killed on the cluster"


def test_standalone_client_mode_runs_the_driver_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_STANDALONE", "spark://10.0.0.5:7077")
    hook = StreamingJobHook(conn_id="spark_standalone")
    assert (hook.cluster_manager, hook.driver_on_this_host) == ("standalone", True)
    launcher = launcher_for("spark_standalone")
    assert isinstance(launcher, LocalLauncher)
    command = launcher.command(Submission("clicks", "d1", [], {}))
    assert command[1:3] == ["--master", "spark://10.0.0.5:7077"] and "--deploy-mode" not in command
    launcher.check(parse_spec({**SPEC, "checkpoint": "/ck/clicks"}))  # a driver here reaches a local path


def test_standalone_cluster_mode_is_refused_for_python(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "spark_sa", "spark://10.0.0.5:7077", **{"deploy-mode": "cluster"})
    with pytest.raises(DeployError, match="cluster mode only on YARN and Kubernetes"):
        launcher_for("spark_sa").check(parse_spec(SPEC))


def test_cluster_mode_refuses_a_local_checkpoint_naming_the_field(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster"})
    launcher = launcher_for("spark_yarn")
    assert isinstance(launcher, ClusterLauncher)
    with pytest.raises(DeployError, match=r"^checkpoint: /ck/clicks is a path on this host.*hdfs://"):
        launcher.check(parse_spec({**SPEC, "checkpoint": "/ck/clicks"}))
    with pytest.raises(DeployError, match="secrets from Airflow connections"):
        launcher.check(parse_spec({**SPEC, "sink": {"format": "kafka", "connection": "kafka_default"}}))
    launcher.check(parse_spec(SPEC))


def test_yarn_cluster_mode_mocked_submit_returns_at_once_and_kill_uses_yarn(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "spark-submit", "INFO Client: Submitted application application_1700000000000_0042")
    report = "Application Report : \n\tApplication-Tags : nightly,async-stream-deployment-d1\n\tState : RUNNING"
    _stub(bin_dir, "yarn", report)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster", "queue": "streaming"})
    launcher = launcher_for("spark_yarn")
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()

    driver = launcher.launch(Submission("clicks", "d1", ["--x", "1"], {}), control)

    log = control.path(ControlArea.DRIVER_LOG)
    assert driver == Driver(kind="yarn-application", application_id="application_1700000000000_0042", log=log)
    [submitted] = _calls(bin_dir, "spark-submit")
    assert submitted == [
        "--master",
        "yarn",
        "--conf",
        "spark.yarn.submit.waitAppCompletion=false",
        "--conf",
        "spark.yarn.tags=async-stream-deployment-d1",
        "--archives",
        f"{runtime_bundle().archive}#async-stream-runtime",  # the runtime, beside the driver
        "--name",
        "async-stream-clicks",
        "--queue",
        "streaming",
        "--deploy-mode",
        "cluster",
        str(runtime_bundle().entry),
        "--x",
        "1",
    ]
    assert b"Submitted application application_1700000000000_0042" in control.read_bytes(ControlArea.DRIVER_LOG)

    assert launcher.kill(driver, Target("/ck.async-stream", "d1")) == "killed on the cluster"  # tagged: killed
    assert _calls(bin_dir, "yarn") == [
        ["application", "-status", "application_1700000000000_0042"],
        ["application", "-kill", "application_1700000000000_0042"],
    ]

    _stub(
        bin_dir, "yarn", "Application Report : \n\tApplication-Id : application_1700000000000_0042\n\tState : RUNNING"
    )
    assert launcher.state(driver) == "RUNNING"
    assert launcher.ended(driver) is None
    _stub(bin_dir, "yarn", "Application Report : \n\tState : FAILED")
    assert launcher.ended(driver) is None  # asked again within STATE_EVERY_S: the cluster is not asked
    launcher._next_state_at = 0.0  # as STATE_EVERY_S later
    assert launcher.ended(driver) == "the driver ended on its cluster (FAILED)"
    assert _calls(bin_dir, "yarn")[-1] == ["application", "-status", "application_1700000000000_0042"]


def test_yarn_status_mocked_goes_through_the_provider_hooks_rest_call(monkeypatch: pytest.MonkeyPatch) -> None:
    _connection(
        monkeypatch,
        "spark_yarn",
        "yarn",
        **{"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "rm:8088"},
    )
    asked: list[str] = []

    def query(self: StreamingJobHook, application_id: str) -> str:
        asked.append(application_id)
        return "FAILED"

    monkeypatch.setattr(StreamingJobHook, "query_yarn_application_status", query)
    launcher = launcher_for("spark_yarn")
    assert launcher.state(Driver(kind="yarn-application", application_id="application_9_0001")) == "FAILED"
    assert asked == ["application_9_0001"]


def test_a_driver_its_cluster_ended_fails_the_startup_wait_at_once(tmp_path: Path) -> None:
    from airflow_async_stream.driver.start import wait_until_running
    from airflow_async_stream.exceptions import DriverFailedError

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    with pytest.raises(DriverFailedError, match=r"ended on its cluster \(FAILED\)"):
        wait_until_running(
            control, "d1", Driver(kind="yarn-application"), 3600, sleep=lambda s: None, launcher=_Ended()
        )


def test_kubernetes_cluster_mode_mocked_submit_and_kill_through_the_kube_client(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from airflow.providers.apache.spark.hooks import spark_submit

    deleted: list[tuple[str, str]] = []

    class FakeCoreV1:
        def delete_namespaced_pod(self, name: str, namespace: str, body: Any = None, pretty: bool = False) -> None:
            deleted.append((name, namespace))

        def read_namespaced_pod(self, name: str, namespace: str) -> Any:
            labels = {
                "spark-role": "driver",
                "async-stream-deployment": "d1" if name.endswith("9f1c2b-driver") else "d0",
            }
            return types.SimpleNamespace(
                status=types.SimpleNamespace(phase="Running" if not deleted else "Failed"),
                metadata=types.SimpleNamespace(labels=labels),
            )

    fake_kube_client = types.SimpleNamespace(get_kube_client=FakeCoreV1, ApiException=RuntimeError)
    fake_kubernetes = types.ModuleType("kubernetes")
    fake_kubernetes.client = types.SimpleNamespace(V1DeleteOptions=lambda: None)  # type: ignore[attr-defined]
    monkeypatch.setattr(spark_submit, "kube_client", fake_kube_client, raising=False)
    monkeypatch.setitem(sys.modules, "kubernetes", fake_kubernetes)
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "spark-submit", "\t pod name: async-stream-clicks-9f1c2b-driver")
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _connection(
        monkeypatch,
        "spark_k8s",
        "k8s://https://k8s.example:6443",
        **{"deploy-mode": "cluster", "namespace": "streaming"},
    )
    launcher = launcher_for("spark_k8s")
    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()

    driver = launcher.launch(Submission("clicks", "d1", [], {}), control)

    pod = Driver(kind="kubernetes-pod", pod="async-stream-clicks-9f1c2b-driver", namespace="streaming")
    assert driver == pod.but(log=control.path(ControlArea.DRIVER_LOG))
    [submitted] = _calls(bin_dir, "spark-submit")
    assert submitted == [
        "--master",
        "k8s://https://k8s.example:6443",
        "--conf",
        "spark.kubernetes.submission.waitAppCompletion=false",
        "--conf",
        "spark.kubernetes.driver.label.async-stream-deployment=d1",
        "--conf",
        "spark.kubernetes.namespace=streaming",
        "--archives",
        f"{runtime_bundle().archive}#async-stream-runtime",
        "--name",
        "async-stream-clicks",
        "--deploy-mode",
        "cluster",
        str(runtime_bundle().entry),
    ]
    assert launcher.state(driver) == "Running"
    other = pod.but(pod="async-stream-payments-77aa01-driver")  # a forged record naming another job's pod
    with pytest.raises(NotSignalledError, match="label async-stream-deployment is 'd0', not 'd1'"):
        launcher.kill(other, Target("/ck.async-stream", "d1"))
    with pytest.raises(NotSignalledError, match="is not provably the driver"):
        launcher.kill(driver, Target("/ck.async-stream", "d2"))  # the pod of an earlier deployment
    assert deleted == []
    launcher.kill(driver, Target("/ck.async-stream", "d1"))
    assert deleted == [("async-stream-clicks-9f1c2b-driver", "streaming")]
    assert launcher.state(driver) == "Failed"


def test_kubernetes_without_the_cncf_provider_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    from airflow.providers.apache.spark.hooks import spark_submit

    if hasattr(spark_submit, "kube_client"):
        pytest.skip("the cncf-kubernetes provider is installed here")
    _connection(monkeypatch, "spark_k8s", "k8s://https://k8s.example:6443", **{"deploy-mode": "cluster"})
    with pytest.raises(DeployError, match="install apache-airflow-providers-cncf-kubernetes"):
        launcher_for("spark_k8s")


def test_a_cluster_driver_that_will_not_stop_is_killed_through_its_cluster(tmp_path: Path) -> None:
    import socket
    import time

    control = ControlArea(str(tmp_path / "ck.async-stream"))
    control.ensure()
    driver = Driver(kind="yarn-application", application_id="application_1_0001")
    control.write_json("deployment.json", {"deployment_id": "d1", "driver": driver.to_json()})
    control.write_json(
        "status.json",
        {
            "deployment_id": "d1",
            "state": "running",
            "heartbeat_at": time.time() + 30,
            "host": socket.gethostname() + "-cluster",
        },
    )
    launcher = _Ended()
    outcome = stop_driver(
        control, "test", graceful_timeout_s=0, kill_after_s=0, sleep=lambda s: None, launcher=launcher
    )
    assert launcher.killed == [driver]
    assert outcome.status and outcome.status.state == "failed" and "killed on the cluster" in outcome.status.error


def test_the_cli_stop_kills_a_stuck_yarn_driver_through_the_connection_mocked(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`stop --conn-id`: the connection's launcher is built only for a driver on a cluster (stub `yarn` CLI)."""
    import socket
    import time

    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "yarn", "Application-Tags : async-stream-deployment-d1\nKilled application application_1_0007")
    control = ControlArea.for_checkpoint(str(tmp_path / "ck"))
    control.ensure()
    driver = Driver(kind="yarn-application", application_id="application_1_0007")
    control.write_json("deployment.json", {"deployment_id": "d1", "driver": driver.to_json()})
    status = {"deployment_id": "d1", "state": "running", "heartbeat_at": time.time() + 30}
    control.write_json("status.json", {**status, "host": socket.gethostname() + "-cluster"})
    env = {
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "AIRFLOW_CONN_SPARK_YARN": json.dumps(
            {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": "cluster"}}
        ),
    }
    stop = ["stop", str(tmp_path / "ck"), "--conn-id", "spark_yarn", "--graceful-timeout", "0", "--kill-after", "0"]

    result = cli(*stop, env=env)

    assert result.stdout.splitlines()[-1] == "stopped: state failed", result
    assert _calls(bin_dir, "yarn") == [
        ["application", "-status", "application_1_0007"],
        ["application", "-kill", "application_1_0007"],
    ]
    assert "killed on the cluster" in (control.read_status().error or "")


def test_yarn_mocked_a_forged_record_naming_an_untagged_application_is_not_killed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The yarn CLI (stubbed) says the application carries another deployment's tag, or none: no kill, and why."""
    bin_dir = tmp_path / "bin"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _connection(monkeypatch, "spark_yarn", "yarn", **{"deploy-mode": "cluster"})
    launcher = launcher_for("spark_yarn")
    someone_elses = Driver(kind="yarn-application", application_id="application_1700000000000_0099")
    for tags in ("payroll-nightly", ""):
        _stub(bin_dir, "yarn", f"Application Report : \n\tApplication-Tags : {tags}\n\tState : RUNNING")
        with pytest.raises(NotSignalledError) as refused:
            launcher.kill(someone_elses, Target("/ck.async-stream", "d1"))
        assert (
            "application_1700000000000_0099 is not provably the driver: it is not tagged async-stream-deployment-d1"
            in str(refused.value)
        )
    _stub(bin_dir, "yarn", "Exception in thread main: connection refused")  # no answer: no kill either
    with pytest.raises(NotSignalledError, match="tags of YARN application .* cannot be read"):
        launcher.kill(someone_elses, Target("/ck.async-stream", "d1"))
    assert all(call[:2] == ["application", "-status"] for call in _calls(bin_dir, "yarn"))  # never -kill


def test_yarn_mocked_tags_are_read_through_the_resourcemanagers_rest_api(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import requests

    asked: list[str] = []

    def get(url: str, **kwargs: Any) -> Any:
        asked.append(url)
        return types.SimpleNamespace(
            json=lambda: {"app": {"applicationTags": "async-stream-deployment-20261129t150422z-ab12"}}
        )

    monkeypatch.setattr(requests, "get", get)
    bin_dir = tmp_path / "bin"
    _stub(bin_dir, "yarn", "Killed application application_9_0001")  # the kill itself: the yarn CLI
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    _connection(
        monkeypatch,
        "spark_yarn",
        "yarn",
        **{"deploy-mode": "cluster", "yarn_resourcemanager_webapp_address": "rm:8088"},
    )
    launcher = launcher_for("spark_yarn")
    app = Driver(kind="yarn-application", application_id="application_9_0001")
    with pytest.raises(NotSignalledError):
        launcher.kill(app, Target("/ck.async-stream", "20261129T150422Z-cd34"))
    assert launcher.kill(app, Target("/ck.async-stream", "20261129T150422Z-ab12")) == "killed on the cluster"
    assert asked == ["http://rm:8088/ws/v1/cluster/apps/application_9_0001"] * 2
    assert _calls(bin_dir, "yarn") == [["application", "-kill", "application_9_0001"]]
