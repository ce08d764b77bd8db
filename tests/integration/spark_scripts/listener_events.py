"""The driver's progress listener beside PySpark's own, on one query (any line, 3.5 to 4.3).

    spark-submit listener_events.py CHECKPOINT

rate-micro-batch -> noop at a 100 ms trigger with both listeners until each saw 20 progress events; the py4j
calls each made per event (counted on the Python side) and the records each gives for every batch both saw.

Prints one JSON line: {"spark": version, "compared": n, "differ": [...], "calls": {"ours": [...], "pyspark": [...]}}.
"""

import json
import sys
import threading
import time
from collections import defaultdict

from py4j.java_gateway import GatewayClient
from pyspark.sql import SparkSession
from pyspark.sql.streaming import listener as pyspark_listener

from airflow_async_stream.runtime import listener, progress

spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
spark.sparkContext.setLogLevel("ERROR")
_counting = threading.local()
calls: dict[str, list[int]] = defaultdict(list)
_send = GatewayClient.send_command


def _counted_send(self, *args, **kwargs):  # type: ignore[no-untyped-def]
    if getattr(_counting, "name", None):
        calls[_counting.name][-1] += 1
    return _send(self, *args, **kwargs)


def counting(name, method):  # type: ignore[no-untyped-def]
    def wrapped(self, jevent):  # type: ignore[no-untyped-def]
        calls[name].append(0)
        _counting.name = name
        try:
            return method(self, jevent)
        finally:
            _counting.name = None

    return wrapped


GatewayClient.send_command = _counted_send
listener._JsonEvents.onQueryProgress = counting("ours", listener._JsonEvents.onQueryProgress)
pyspark_listener.JStreamingQueryListener.onQueryProgress = counting(
    "pyspark", pyspark_listener.JStreamingQueryListener.onQueryProgress
)


class Seen:
    """What a governor is handed: each batch's record."""

    def __init__(self) -> None:
        self.records: dict[int, dict] = {}

    def record_progress(self, event) -> None:  # type: ignore[no-untyped-def]
        record = progress.progress_record(event, "d")
        self.records[record["batch_id"]] = record

    def record_idle(self) -> None:
        pass


class Stock(pyspark_listener.StreamingQueryListener):
    def __init__(self, seen: Seen) -> None:
        self.seen = seen

    def onQueryStarted(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        pass

    def onQueryProgress(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        self.seen.record_progress(event.progress)

    def onQueryIdle(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        pass

    def onQueryTerminated(self, event) -> None:  # type: ignore[no-untyped-def]  # noqa: N802
        pass


ours, theirs = Seen(), Seen()
spark.streams.addListener(listener.ProgressListener(ours))  # type: ignore[arg-type]
spark.streams.addListener(Stock(theirs))
query = (
    spark.readStream.format("rate-micro-batch").option("rowsPerBatch", "10").load()
    .writeStream.format("noop").option("checkpointLocation", sys.argv[1])
    .trigger(processingTime="100 milliseconds").start()
)  # fmt: skip
deadline = time.monotonic() + 180
while min(len(calls["ours"]), len(calls["pyspark"])) < 20 and time.monotonic() < deadline:
    query.awaitTermination(0.2)  # the listener bus delivers on its own thread: nothing to wait on but time
query.stop()
both = sorted(set(ours.records) & set(theirs.records))
differ = [{"ours": ours.records[b], "pyspark": theirs.records[b]} for b in both if ours.records[b] != theirs.records[b]]
print(json.dumps({"spark": spark.version, "compared": len(both), "differ": differ[:3], "calls": dict(calls)}))
spark.stop()
