"""Plain PySpark, no provider and no Airflow: the Spark work of a safe-disable migration, timed.

    migration_lower_bound.py CHECKPOINT async0   start, run with async on and interval 0 until two batches
                                                 newer than the start are committed, stop
    migration_lower_bound.py CHECKPOINT sync     start synchronously, stop at the first committed batch
Each phase is its own process, as each deploy is. Prints {"seconds": ..., "first_batch_start": ...,
"last_batch_end": ...}: seconds measured inside the process from interpreter start (the process launch itself
is timed by the caller), and when its first micro-batch that ran started and its last one ended (epoch
seconds, from Spark's progress), so the caller can measure the stream's pause across processes.
"""

import json
import os
import sys
import time
from datetime import datetime

t0 = time.monotonic()
from pyspark.sql import SparkSession  # noqa: E402

checkpoint, mode = sys.argv[1], sys.argv[2]


def commits() -> list[int]:
    folder = os.path.join(checkpoint, "commits")
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []


baseline = (commits() or [-1])[-1]
need = 2 if mode == "async0" else 1
spark = SparkSession.builder.config("spark.ui.showConsoleProgress", "false").getOrCreate()
writer = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", "1000")
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", checkpoint)
    .trigger(processingTime="100 milliseconds")
)
if mode == "async0":
    writer = writer.option("asyncProgressTrackingEnabled", "true").option(
        "asyncProgressTrackingCheckpointIntervalMs", "0"
    )
query = writer.start()
while len([c for c in commits() if c > baseline]) < need:
    query.awaitTermination(0.05)
committed_after = time.monotonic() - t0
query.stop()
stopped_after = time.monotonic() - t0
ran = [p for p in query.recentProgress if "addBatch" in (p.durationMs or {})]
starts = [datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() for p in ran]
ends = [start + p.durationMs["triggerExecution"] / 1000 for start, p in zip(starts, ran, strict=True)]
# The migration stops the async job (step c) but leaves the synchronous one running once it committed.
print(
    json.dumps(
        {
            "seconds": stopped_after if mode == "async0" else committed_after,
            "first_batch_start": min(starts) if starts else None,
            "last_batch_end": max(ends) if ends else None,
        }
    )
)
