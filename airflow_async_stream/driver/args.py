"""The runtime driver's command line, built on the Airflow side and parsed in the driver.

The async settings ride on the command line so ``ps`` and Spark's UI show what a driver runs with;
the spec digest lets the driver refuse a spec.json replaced after submit. Nothing secret goes here.
"""

from __future__ import annotations

import argparse
import hashlib

from airflow_async_stream.spec.model import JobSpec

__all__ = ["driver_arguments", "parse_driver_arguments", "spec_digest"]


def spec_digest(spec_json: bytes) -> str:
    return hashlib.sha256(spec_json).hexdigest()


def driver_arguments(control_url: str, deployment_id: str, spec: JobSpec, spec_json: bytes) -> list[str]:
    return [
        "--control-area",
        control_url,
        "--deployment-id",
        deployment_id,
        "--spec-sha256",
        spec_digest(spec_json),
        "--async-progress-enabled",
        "true" if spec.async_progress.enabled else "false",
        "--async-progress-interval-ms",
        str(spec.async_progress.checkpoint_interval_ms),
    ]


def parse_driver_arguments(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="airflow-async-stream-driver")
    parser.add_argument("--control-area", required=True)
    parser.add_argument("--deployment-id", required=True)
    parser.add_argument("--spec-sha256", required=True)
    parser.add_argument("--async-progress-enabled", choices=["true", "false"], required=True)
    parser.add_argument("--async-progress-interval-ms", type=int, required=True)
    return parser.parse_args(argv)
