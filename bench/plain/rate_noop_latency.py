"""Plain PySpark, no provider: rate -> noop for a number of batches; prints the progress durations as JSON.

    rate_noop_latency.py CHECKPOINT MODE BATCHES ROWS_PER_SECOND TRIGGER
MODE is sync, async1000 or async0. The same pipeline and trigger the provider benchmark deploys.
"""

import json
import sys

from pyspark.sql import SparkSession

checkpoint, mode, batches, rows, trigger = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
spark = (
    SparkSession.builder.appName(f"plain-{mode}")
    .config("spark.ui.showConsoleProgress", "false")
    .config("spark.sql.streaming.numRecentProgressUpdates", str(batches + 10))
    .getOrCreate()
)
writer = (
    spark.readStream.format("rate").option("rowsPerSecond", rows).load()
    .writeStream.format("noop").option("checkpointLocation", checkpoint).trigger(processingTime=trigger)
)  # fmt: skip
if mode != "sync":
    writer = writer.option("asyncProgressTrackingEnabled", "true").option(
        "asyncProgressTrackingCheckpointIntervalMs", "1000" if mode == "async1000" else "0"
    )
query = writer.start()
while query.isActive and len(query.recentProgress) < batches:
    query.awaitTermination(0.2)
progress = [{"batch_id": p.batchId, "duration_ms": dict(p.durationMs)} for p in query.recentProgress]
query.stop()
print(json.dumps(progress))
