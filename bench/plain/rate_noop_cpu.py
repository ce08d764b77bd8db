"""Plain PySpark, no provider: rate-micro-batch -> noop until a file appears, for the CPU benchmark.

    rate_noop_cpu.py CHECKPOINT TRIGGER SETTINGS_JSON STOP_FILE LISTENER
LISTENER is "none" (Spark alone) or "pyspark" (a PySpark StreamingQueryListener that reads each progress
event's batch id, as any listener in Python pays PySpark's conversion of the event)."""

import json
import os
import sys

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

checkpoint, trigger, settings, stop_file, listener = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), *sys.argv[4:6]


class Reads(StreamingQueryListener):
    def onQueryStarted(self, event):  # noqa: N802 (Spark's names)
        pass

    def onQueryProgress(self, event):  # noqa: N802
        self.last = event.progress.batchId

    def onQueryIdle(self, event):  # noqa: N802
        pass

    def onQueryTerminated(self, event):  # noqa: N802
        pass


builder = SparkSession.builder.appName("plain-cpu").master(settings["master"])
for key, value in settings["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
if listener == "pyspark":
    spark.streams.addListener(Reads())
query = (
    spark.readStream.format("rate-micro-batch")
    .option("rowsPerBatch", "10")
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", checkpoint)
    .trigger(processingTime=trigger)
    .start()
)
while not os.path.exists(stop_file):
    query.awaitTermination(0.2)
query.stop()
spark.stop()
