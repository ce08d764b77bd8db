"""Plain PySpark, no provider: rate -> noop until a number of micro-batches ran; their progress to a file.

    rate_noop_latency.py CHECKPOINT MODE BATCHES ROWS_PER_SECOND TRIGGER SETTINGS_JSON PROGRESS_FILE
MODE is sync, async1000 or async0. The same pipeline, trigger and Spark settings (SETTINGS_JSON: {"master",
"conf"}, what the provider's driver gets) the provider benchmark deploys; progress is collected as the
provider's driver collects it, by a listener writing each event to a file, and the job itself polls nothing.
Prints {"batches": N}, N the micro-batches that ran before the query stopped.
"""

import json
import sys
import threading

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

checkpoint, mode, batches, rows, trigger = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
settings, progress_file = json.loads(sys.argv[6]), sys.argv[7]


class ToFile(StreamingQueryListener):
    """Each progress event as one JSON line; ``done`` once ``batches`` micro-batches ran."""

    def __init__(self) -> None:
        self.out = open(progress_file, "a")  # noqa: SIM115 (each line flushed; a late event may still come)
        self.ran = 0
        self.done = threading.Event()

    def onQueryStarted(self, event):  # noqa: N802 (Spark's names)
        pass

    def onQueryProgress(self, event):  # noqa: N802
        p = event.progress
        durations = dict(p.durationMs or {})
        record = {"batch_id": p.batchId, "timestamp": p.timestamp, "duration_ms": durations}
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()
        if "addBatch" in durations:
            self.ran += 1
            if self.ran >= batches:
                self.done.set()

    def onQueryIdle(self, event):  # noqa: N802
        pass

    def onQueryTerminated(self, event):  # noqa: N802
        self.done.set()


builder = SparkSession.builder.appName(f"plain-{mode}").master(settings["master"])
for key, value in settings["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
listener = ToFile()
spark.streams.addListener(listener)
writer = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", rows)
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", checkpoint)
    .trigger(processingTime=trigger)
)
if mode != "sync":
    writer = writer.option("asyncProgressTrackingEnabled", "true").option(
        "asyncProgressTrackingCheckpointIntervalMs", "1000" if mode == "async1000" else "0"
    )
query = writer.start()
listener.done.wait(batches * 10 + 120)
query.stop()
spark.streams.removeListener(listener)
print(json.dumps({"batches": listener.ran}))
