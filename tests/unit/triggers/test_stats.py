"""The watcher's figures through Airflow's own metrics backends, configured as users configure them: an
OpenTelemetry export (OTLP over HTTP) received by a collector stand-in on 127.0.0.1. StatsD is received from a
real triggerer in tests/integration/test_supervisor.py."""

from __future__ import annotations

import http.server
import json
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import ExportMetricsServiceRequest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.supervise.metrics import HEALTH_CODES
from tests.helpers import rate_noop

SWEEP = """
import logging
from airflow.observability import stats
from airflow.observability.metrics import stats_utils
from opentelemetry import metrics

stats.initialize(factory=stats_utils.get_stats_factory(), export_legacy_names=False)  # as the triggerer does
from airflow_async_stream.triggers.health import _sweep_fleet

print(len(_sweep_fleet([], [{folder!r}], logging.getLogger())))
metrics.get_meter_provider().force_flush()
"""


@pytest.fixture
def collector() -> Iterator[tuple[int, list[bytes]]]:
    """An OTLP/HTTP receiver: every body POSTed to /v1/metrics."""
    bodies: list[bytes] = []

    class Receiver(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - the handler's protocol
            body = self.rfile.read(int(self.headers["Content-Length"]))
            if self.path == "/v1/metrics":
                bodies.append(body)
            self.send_response(200)
            self.end_headers()

        def log_message(self, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], bodies
    server.shutdown()


def _points(bodies: list[bytes]) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Each metric's distinct data points: (attributes, value)."""
    points: dict[str, list[tuple[dict[str, str], float]]] = {}
    for body in bodies:
        request = ExportMetricsServiceRequest.FromString(body)
        for resource in request.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    data = getattr(metric, metric.WhichOneof("data"))
                    for point in data.data_points:
                        attributes = {a.key: a.value.string_value for a in point.attributes}
                        value = point.as_double if point.HasField("as_double") else point.as_int
                        if (attributes, value) not in points.setdefault(metric.name, []):  # each export repeats it
                            points[metric.name].append((attributes, value))
    return points


def test_figures_and_incidents_reach_an_opentelemetry_collector_with_the_job_as_a_tag(
    tmp_path: Path, collector: tuple[int, list[bytes]]
) -> None:
    port, bodies = collector
    spec = rate_noop("clicks", str(tmp_path / "jobs" / "clicks"), restart={"policy": "never"})
    control = ControlArea.for_checkpoint(spec["checkpoint"])
    control.ensure()
    control.write_bytes(ControlArea.SPEC, json.dumps(spec).encode())
    control.write_json(ControlArea.DEPLOYMENT, {"deployment_id": "d1", "deployed_at": time.time() - 60})
    control.write_json(
        ControlArea.STATUS,
        {
            "deployment_id": "d1",
            "state": "failed",
            "batches": 5,
            "error": "boom",
            "finished_at": time.time() - 5,
            "heartbeat_at": time.time() - 5,
        },
    )
    # OpenTelemetry's own settings, as Airflow advises; the export at the flush, not at an interval.
    env = {
        **os.environ,
        "AIRFLOW__METRICS__OTEL_ON": "True",
        "AIRFLOW__METRICS__STATSD_ON": "False",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT": f"http://127.0.0.1:{port}/v1/metrics",
        "OTEL_METRIC_EXPORT_INTERVAL": "600000",
    }
    done = subprocess.run(
        [sys.executable, "-c", SWEEP.format(folder=str(tmp_path / "jobs"))],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout.splitlines()[-1] == "1", (
        done.stdout[-3000:] + done.stderr[-3000:]
    )  # one change: crashed

    points = _points(bodies)
    assert points["airflow.async_stream.job.health"] == [({"job": "clicks"}, HEALTH_CODES["crashed"])], points
    assert points["airflow.async_stream.job.up"] == [({"job": "clicks"}, 0)]
    assert points["airflow.async_stream.job.restarts_in_window"] == [({"job": "clicks"}, 0)]
    assert points["airflow.async_stream.job.incidents"] == [({"job": "clicks", "kind": "crashed"}, 1)]
    assert not [name for name in points if "clicks" in name]  # the job is a tag, never part of a name
