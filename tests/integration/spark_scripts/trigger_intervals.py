"""What PySpark itself makes of trigger interval strings: for each string and trigger kind, whether
``DataStreamWriter.trigger`` accepts it and, if so, the interval in ms the JVM's trigger holds.

    trigger_intervals.py STRINGS.json ANSWERS.json

STRINGS.json is a list of strings; ANSWERS.json gets {kind: [ms or null, ...]} in the same order.
"""

import json
import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
writer = spark.readStream.format("rate").load().writeStream
jvm_trigger = spark._jvm.org.apache.spark.sql.streaming.Trigger
kinds = {
    "processingTime": lambda s: jvm_trigger.ProcessingTime(s).intervalMs(),
    "continuous": lambda s: jvm_trigger.Continuous(s).intervalMs(),
    "realTime": lambda s: jvm_trigger.RealTime(s).batchDurationMs(),
}
strings = json.load(open(sys.argv[1], encoding="utf-8"))
answers = {}
for kind, held_ms in kinds.items():
    found = []
    for text in strings:
        try:
            writer.trigger(**{kind: text})
        except Exception:  # PySpark's check or the JVM's: refused either way
            found.append(None)
            continue
        found.append(int(held_ms(text.strip())))
    answers[kind] = found
json.dump(answers, open(sys.argv[2], "w", encoding="utf-8"))
spark.stop()
