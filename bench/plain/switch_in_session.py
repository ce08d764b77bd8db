"""Plain PySpark, no provider: the in-place switches of a safe-disable, done by hand in one warm session.

    switch_in_session.py CHECKPOINT CYCLES SETTINGS_JSON PROGRESS_FILE SOURCE_JSON
SOURCE_JSON ({"format", "options"}) -> noop, 100 ms trigger, starts with async progress at 3000 ms. Each
cycle: once the checkpoint has a gap (offsets N without N-1), switch to interval 0; once two batches of that
query committed, switch to synchronous after checking the stopped checkpoint (offsets N-1 is there); once one
synchronous batch ran, switch back to async at 3000 ms. Each switch stops between micro-batches (no trigger
active) and starts the same writer with the new options on the same checkpoint. SETTINGS_JSON ({"master",
"conf"}) are the provider driver's Spark settings; a listener writes every progress event to PROGRESS_FILE.
Prints {"switches": [{"kind", "before_run", "after_run", "stopped_at", "started_at"}, ...]} (epoch seconds: when
the old query had stopped, when the new one's start returned), with "error" when a step failed.
"""

import json
import os
import sys
import time

from pyspark.sql import SparkSession
from pyspark.sql.streaming import StreamingQueryListener

checkpoint, cycles, settings, progress_file = sys.argv[1], int(sys.argv[2]), json.loads(sys.argv[3]), sys.argv[4]
source = json.loads(sys.argv[5])
WAIT_S = 120


class ToFile(StreamingQueryListener):
    def __init__(self) -> None:
        self.out = open(progress_file, "a")  # noqa: SIM115 (each line flushed; a late event may still come)

    def onQueryStarted(self, event):  # noqa: N802 (Spark's names)
        pass

    def onQueryProgress(self, event):  # noqa: N802
        self.write(event.progress)

    def write(self, p) -> None:
        record = {
            "query_run_id": str(p.runId),
            "batch_id": p.batchId,
            "timestamp": p.timestamp,
            "duration_ms": dict(p.durationMs or {}),
        }
        self.out.write(json.dumps(record) + "\n")
        self.out.flush()

    def onQueryIdle(self, event):  # noqa: N802
        pass

    def onQueryTerminated(self, event):  # noqa: N802
        pass


def ids(log: str) -> list[int]:
    folder = os.path.join(checkpoint, log)
    return sorted(int(n) for n in os.listdir(folder) if n.isdigit()) if os.path.isdir(folder) else []


def wait_for(what: str, condition, query) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        if not query.isActive or time.monotonic() > deadline:
            raise RuntimeError(f"waited {WAIT_S} s for {what}; query active: {query.isActive}")
        time.sleep(0.05)


def has_gap() -> bool:
    offsets = ids("offsets")
    return len(offsets) >= 2 and offsets[-1] - 1 not in offsets


builder = SparkSession.builder.appName("plain-switch").master(settings["master"])
for key, value in settings["conf"].items():
    builder = builder.config(key, value)
spark = builder.getOrCreate()
listener = ToFile()
spark.streams.addListener(listener)
writer = (
    spark.readStream.format(source["format"])
    .options(**source["options"])
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", checkpoint)
    .trigger(processingTime="100 milliseconds")
)


def start(interval_ms):
    """None: synchronous."""
    writer.option("asyncProgressTrackingEnabled", "false" if interval_ms is None else "true")
    writer.option("asyncProgressTrackingCheckpointIntervalMs", str(interval_ms if interval_ms is not None else 1000))
    return writer.start()


def stop_between_batches(query) -> None:
    while query.isActive and query.status["isTriggerActive"]:
        time.sleep(0.01)
    query.stop()


switches = []
queries = []
try:
    query = start(3000)
    for _ in range(cycles):
        wait_for("a gap in offsets/", has_gap, query)
        for kind, interval_ms, then in (
            ("to_interval_0", 0, "two committed batches"),
            ("to_synchronous", None, "a synchronous batch"),
            ("to_async_3000", 3000, None),
        ):
            stop_between_batches(query)
            stopped_at = time.time()
            before = str(query.runId)
            if interval_ms is None:  # the gate: a synchronous start needs offsets N-1 beside the newest N
                offsets = ids("offsets")
                if offsets and offsets[-1] > 0 and offsets[-1] - 1 not in offsets:
                    raise RuntimeError(f"the gate refused: offsets {offsets[-3:]}")
            baseline = (ids("commits") or [-1])[-1]
            queries.append(query)
            query = start(interval_ms)
            switches.append(
                {
                    "kind": kind,
                    "before_run": before,
                    "after_run": str(query.runId),
                    "stopped_at": stopped_at,
                    "started_at": time.time(),
                }
            )
            if then == "two committed batches":
                wait_for(then, lambda b=baseline: len([c for c in ids("commits") if c > b]) >= 2, query)
            else:  # the first batch of a run is always written, async or not
                wait_for(then or "a batch", lambda b=baseline: (ids("commits") or [-1])[-1] > b, query)
    stop_between_batches(query)
    queries.append(query)
    for ended in queries:  # the listener bus is asynchronous: events it had not delivered yet (read as duplicates)
        for progress in ended.recentProgress:
            listener.write(progress)
    print(json.dumps({"switches": switches}))
except Exception as exc:  # the benchmark reports it as this side's failure
    print(json.dumps({"error": f"{type(exc).__name__}: {exc}", "switches": switches}))
