"""A plain PySpark job, written without the provider: rate -> noop on a checkpoint.

    plain_rate_noop.py CHECKPOINT gaps      async on, interval 3000 ms, trigger 100 ms; stops once the
                                            newest offsets file has no predecessor (the trap is set)
    plain_rate_noop.py CHECKPOINT sync      async off; prints the error the query died with, if any
    plain_rate_noop.py CHECKPOINT second    async off, on a checkpoint another query owns: writes three
                                            batches past its newest offsets file, then stops

Prints one JSON line: {"error": ..., "offsets": [...], "last_batch_end": ...} (the end of its last micro-batch
that ran, epoch seconds from Spark's progress: the benchmark measures the pause to the next process from it).
"""

import json
import os
import sys
import time
from datetime import datetime

from pyspark.sql import SparkSession

checkpoint, mode = sys.argv[1], sys.argv[2]
spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
writer = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", "1000")
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", checkpoint)
    .trigger(processingTime="100 milliseconds")
)


def offsets() -> list[int]:
    folder = os.path.join(checkpoint, "offsets")
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []


error = None
if mode == "gaps":
    query = (
        writer.option("asyncProgressTrackingEnabled", "true")
        .option("asyncProgressTrackingCheckpointIntervalMs", "3000")
        .start()
    )
    deadline = time.monotonic() + 120
    while not (len(offsets()) >= 2 and offsets()[-1] - 1 not in offsets()):
        if time.monotonic() > deadline or not query.isActive:
            error = "no gap appeared"
            break
        query.awaitTermination(0.2)
    query.stop()
elif mode == "second":
    target = (offsets() or [-1])[-1] + 3
    query = writer.start()
    while (offsets() or [-1])[-1] < target and query.isActive:
        query.awaitTermination(0.2)
    error = None if query.isActive else str(query.exception())
    query.stop()
else:
    query = writer.start()
    try:
        query.awaitTermination(90)
        error = "the synchronous query kept running" if query.isActive else None
    except Exception as exc:  # the point of this script: report what Spark said
        error = str(exc)
    if query.isActive:
        query.stop()
ran = [p for p in query.recentProgress if "addBatch" in (p.durationMs or {})]
ends = [
    datetime.fromisoformat(p.timestamp.replace("Z", "+00:00")).timestamp() + p.durationMs["triggerExecution"] / 1000
    for p in ran
]
print(json.dumps({"error": error, "offsets": offsets(), "last_batch_end": max(ends) if ends else None}))
