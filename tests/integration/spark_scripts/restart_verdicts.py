"""The inspector's verdict against this Spark's own synchronous restart, in one driver (any line, 3.5 to 4.3).

    spark-submit restart_verdicts.py ROOT

On ``ROOT/gaps``: rate -> noop with async on (interval 3000 ms, trigger 100 ms) until the newest offsets file
has no predecessor; the inspector's verdict; a synchronous restart (Spark's error). Then the documented cure
(async at interval 0 for two committed batches), the verdict, and a synchronous restart (the batches it ran).
On ``ROOT/v2`` (Spark 4.x): a synchronous query writing the log formats v2 (commits with state unique ids,
offsets where this Spark writes them), the verdict and a synchronous restart.

Prints one JSON line: {"spark": version, "<case>": {"safe", "reason", "headers", "error", "ran"}, ...}.
"""

import json
import os
import sys
import time

from pyspark.sql import SparkSession

from airflow_async_stream.state.checkpoint import inspect_checkpoint

root = sys.argv[1]
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
#: Spark's settings for the v2 formats: commits v2 (4.0+), offsets v2 (where this Spark has the setting).
V2_CONF = {
    "spark.sql.streaming.stateStore.checkpointFormatVersion": "2",
    "spark.sql.streaming.offsetLog.formatVersion": "2",
}


def ids(checkpoint: str, log: str) -> list[int]:
    folder = os.path.join(checkpoint, log)
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []


def start(checkpoint: str, **options: str):  # noqa: ANN201
    writer = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", "500")
        .load()
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .trigger(processingTime="100 milliseconds")
    )
    return writer.options(**options).start()


def run_until(query, done, timeout_s: float = 90) -> None:  # noqa: ANN001
    deadline = time.monotonic() + timeout_s
    while not done() and query.isActive and time.monotonic() < deadline:
        query.awaitTermination(0.1)
    if not done():
        raise SystemExit(f"gave up waiting: active {query.isActive}, error {query.exception()}")
    query.stop()


def verdict(checkpoint: str) -> dict:
    found = inspect_checkpoint(checkpoint)
    headers = {log: sorted(set(getattr(found, log).headers.values())) for log in ("offsets", "commits")}
    return {"safe": found.sync_restart_safe, "reason": found.reason, "headers": headers}


def sync_restart(checkpoint: str) -> dict:
    """Restart synchronously: Spark's error, or the batches it committed (two, then it stops)."""
    before = ids(checkpoint, "commits")[-1]
    query = start(checkpoint)
    deadline = time.monotonic() + 60
    error = None
    while query.isActive and len([b for b in ids(checkpoint, "commits") if b > before]) < 2:
        if time.monotonic() > deadline:
            break
        try:
            query.awaitTermination(0.1)
        except Exception as exc:  # noqa: BLE001 - the point: what Spark says
            error = str(exc)
    query.stop()
    return {"error": error, "ran": [b for b in ids(checkpoint, "commits") if b > before]}


result: dict = {"spark": spark.version}
gaps = os.path.join(root, "gaps")
async_on = {"asyncProgressTrackingEnabled": "true"}
query = start(gaps, **async_on, asyncProgressTrackingCheckpointIntervalMs="3000")
run_until(query, lambda: len(ids(gaps, "offsets")) >= 2 and ids(gaps, "offsets")[-1] - 1 not in ids(gaps, "offsets"))
result["gaps"] = {**verdict(gaps), **sync_restart(gaps)}
newest = ids(gaps, "commits")[-1]
query = start(gaps, **async_on, asyncProgressTrackingCheckpointIntervalMs="0")
run_until(query, lambda: len([b for b in ids(gaps, "commits") if b > newest]) >= 2)
result["cured"] = {**verdict(gaps), **sync_restart(gaps)}
if int(spark.version.split(".")[0]) >= 4:
    v2 = os.path.join(root, "v2")
    for key, value in V2_CONF.items():
        try:
            spark.conf.set(key, value)
        except Exception:  # noqa: BLE001 - this Spark has no such setting: it writes that log as v1
            pass
    query = start(v2)
    run_until(query, lambda: len(ids(v2, "commits")) >= 3)
    result["v2"] = {**verdict(v2), **sync_restart(v2)}
print(json.dumps(result))
