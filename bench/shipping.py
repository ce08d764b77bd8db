"""What a deploy pays for shipping the runtime bundle (driver/bundle.py): the first deploy on a host builds it,
later ones reuse it.

Each sample runs in a fresh interpreter (as a new Airflow task does) against its own bundles folder: ``first``
builds the bundle, ``later`` finds it built (the hash of this package's files and the versions), ``same process``
is a second deploy in one worker process. Then two real deploys of one rate -> noop job whose driver runs a bare
Python (nothing installed): seconds from submit to the first batch, the first with no bundle built yet.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import run_json

PROBE = """
import json, sys, time
t0 = time.perf_counter()
from airflow_async_stream.driver.bundle import runtime_bundle
t1 = time.perf_counter()
first = runtime_bundle(sys.argv[1:])
t2 = time.perf_counter()
runtime_bundle(sys.argv[1:])
t3 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "call_s": t2 - t1, "built_s": first.built_s, "again_s": t3 - t2,
                  "archive_mb": first.archive.stat().st_size / 2**20, "key": first.key}))
"""
ROUNDS = 3


def _sample(folder: Path, protocols: list[str]) -> dict[str, Any]:
    result, _ = run_json(["-c", PROBE, *protocols], env={"AIRFLOW_ASYNC_STREAM_BUNDLES": str(folder)})
    return dict(result)


def _bundle_costs(protocols: list[str], log: Any) -> dict[str, Any]:
    firsts, laters, same = [], [], []
    archive_mb = 0.0
    for _ in range(ROUNDS):
        folder = Path(tempfile.mkdtemp(prefix="bench-bundles-"))
        try:
            cold = _sample(folder, protocols)
            warm = _sample(folder, protocols)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        assert cold["built_s"] > 0 and warm["built_s"] == 0 and cold["key"] == warm["key"], (cold, warm)
        firsts.append(cold["call_s"])
        laters.append(warm["call_s"])
        same.append(warm["again_s"])
        archive_mb = cold["archive_mb"]
    entry = {
        "first_deploy_s": statistics.median(firsts),
        "later_deploy_s": statistics.median(laters),
        "same_process_s": statistics.median(same),
        "archive_mb": round(archive_mb, 1),
    }
    log(
        f"bundle {'+'.join(protocols) or 'local'}: first deploy {entry['first_deploy_s']:.2f} s, later "
        f"{entry['later_deploy_s'] * 1000:.0f} ms, same process {entry['same_process_s'] * 1000:.2f} ms; "
        f"runtime.zip {entry['archive_mb']} MiB"
    )
    return entry


def _deploys(log: Any) -> dict[str, Any]:
    """Two deploys of one job with a bare driver Python: the first builds the bundle, the second reuses it."""
    from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
    from airflow_async_stream.driver.local import LocalLauncher
    from airflow_async_stream.spec.load import parse_spec
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.hold import Holder

    root = Path(tempfile.mkdtemp(prefix="bench-shipping-"))
    bare = root / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = str(bare / "bin" / "python")
    spec = parse_spec(
        {
            "name": "shipping",
            "checkpoint": str(root / "ck"),
            "source": {"format": "rate"},
            "sink": {"format": "noop"},
            "trigger": {"processing_time": "500 milliseconds"},
            "spark_conf": {"spark.pyspark.driver.python": python, "spark.pyspark.python": python},
        }
    )
    os.environ["AIRFLOW_ASYNC_STREAM_BUNDLES"] = str(root / "bundles")
    settings = DeploySettings(launcher=LocalLauncher())
    holder = Holder.this_process("bench.shipping")
    taken = []
    try:
        for _ in range(2):
            t0 = time.monotonic()
            deploy_job(spec, holder, settings)
            taken.append(time.monotonic() - t0)
            stop_job(ControlArea.for_checkpoint(spec.checkpoint), holder, settings, "bench")
    finally:
        os.environ.pop("AIRFLOW_ASYNC_STREAM_BUNDLES", None)
        shutil.rmtree(root, ignore_errors=True)
    log(f"deploy to the first batch, bare driver Python: first {taken[0]:.1f} s (bundle built), later {taken[1]:.1f} s")
    return {"first_deploy_to_first_batch_s": taken[0], "later_deploy_to_first_batch_s": taken[1]}


def run(log: Any = print) -> dict[str, Any]:
    return {
        "local": _bundle_costs([], log),
        "s3": _bundle_costs(["s3a"], log),
        "deploys": _deploys(log),
    }
