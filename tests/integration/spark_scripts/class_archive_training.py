"""The training run of the tests' class-data-sharing archive: what a governed driver does, briefly.

A rate source through a SQL projection into the noop sink, async progress tracking on at interval 0,
a query listener, four micro-batches, a stop: the JVM archives every class it loaded when it exits.
"""

import tempfile

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener


class Listener(StreamingQueryListener):
    def onQueryStarted(self, event):  # noqa: N802 (Spark's names)
        pass

    def onQueryProgress(self, event):  # noqa: N802
        pass

    def onQueryIdle(self, event):  # noqa: N802
        pass

    def onQueryTerminated(self, event):  # noqa: N802
        pass


spark = SparkSession.builder.appName("class-archive-training").getOrCreate()
spark.streams.addListener(Listener())
with tempfile.TemporaryDirectory() as checkpoint:
    query = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", "100")
        .load()
        .selectExpr("value", "timestamp", "value % 7 AS bucket")
        .where("value >= 0")
        .writeStream.format("noop")
        .option("checkpointLocation", checkpoint)
        .option("asyncProgressTrackingEnabled", "true")
        .option("asyncProgressTrackingCheckpointIntervalMs", "0")
        .trigger(processingTime="100 milliseconds")
        .start()
    )
    while len(query.recentProgress) < 4:
        query.awaitTermination(0.1)
    query.stop()
spark.stop()
