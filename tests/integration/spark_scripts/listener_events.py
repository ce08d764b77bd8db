"""The driver's progress listener beside PySpark's own, on one query (any line, 3.5 to 4.3).

    spark-submit listener_events.py CHECKPOINT

rate-micro-batch -> noop at a 100 ms trigger with both listeners until each saw 20 progress events; the py4j
calls each made per event (counted on the Python side) and the records each gives for every batch both saw.

Prints one JSON line: {"spark": version, "compared": n, "differ": [{"batch_id": b, "fields": {path: [ours,
pyspark]}}, ...], "calls": {"ours": [...], "pyspark": [...]}}.
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
    spark.readStream.format("rate-micro-batch")
    .option("rowsPerBatch", "10")
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", sys.argv[1])
    .trigger(processingTime="100 milliseconds")
    .start()
)
deadline = time.monotonic() + 180
while min(len(calls["ours"]), len(calls["pyspark"])) < 20 and time.monotonic() < deadline:
    query.awaitTermination(0.2)  # the listener bus delivers on its own thread: nothing to wait on but time
query.stop()


def fields(value: object, path: str = "") -> dict[str, str]:
    """Each leaf of a record by its dotted path, as JSON text (so NaN equals NaN, as the written log has it)."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in fields(item, f"{path}.{key}").items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in fields(item, f"{path}[{i}]").items()}
    return {path: json.dumps(value)}


def same(a: str | None, b: str | None) -> bool:
    """Equal, or two rates a record keeps to 0.1 that came out on either side of a half (seen: 31.3 from the
    event's JSON, 31.2 from PySpark's exact double of 31.25)."""
    if a == b:
        return True
    try:
        return a is not None and b is not None and abs(float(a) - float(b)) <= 0.1 + 1e-9 and "." in a + b
    except ValueError:
        return False


both = sorted(set(ours.records) & set(theirs.records))
differ = []
for b in both:
    mine, stock = fields(ours.records[b]), fields(theirs.records[b])
    changed = {
        k: [mine.get(k), stock.get(k)] for k in sorted(set(mine) | set(stock)) if not same(mine.get(k), stock.get(k))
    }
    if changed:
        differ.append({"batch_id": b, "fields": changed})
print(json.dumps({"spark": spark.version, "compared": len(both), "differ": differ[:3], "calls": dict(calls)}))
spark.stop()
