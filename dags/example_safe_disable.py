"""Turn async progress tracking off for the clicks-async job, safely.

Switches the running driver in place to async on and interval 0, waits for two committed batches, then
switches it to synchronous through the gate (the driver stops its query between micro-batches and starts
synchronously only if Spark could restart the checkpoint that way), and waits for a committed batch. Where
the driver cannot switch in place, each change is a graceful stop and a redeploy instead. On failure it puts
the job back on async (interval 0) and fails with the reason.
"""

from __future__ import annotations

import os
from pathlib import Path

from airflow.sdk import dag

from airflow_async_stream.factories import safe_disable_async_progress
from airflow_async_stream.spec.load import resolve_spec

ROOT = os.environ.get("ASYNC_STREAM_DEMO_ROOT", "/tmp/airflow-async-stream-demo")
SPEC_FILE = Path(__file__).parent / "specs" / "clicks_async.yaml"
JOB = resolve_spec(SPEC_FILE, {"checkpoint": f"{ROOT}/clicks-async"})


@dag(schedule=None, catchup=False, tags=["async-stream", "example", "migration"])
def example_safe_disable():
    # The last step says whether SPEC_FILE still turns async on (it does: change it before the next deploy).
    safe_disable_async_progress(JOB, spec_file=SPEC_FILE)


example_safe_disable()
