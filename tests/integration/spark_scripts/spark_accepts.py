"""What PySpark itself accepts, asked of a local Spark without starting a query.

    spark_accepts.py QUESTIONS.json ANSWERS.json

QUESTIONS.json: {"intervals": [string, ...], "sources": [[format, {option: value}], ...]}. ANSWERS.json gets
{"intervals": {kind: [ms or null, ...]}, "sources": [true/false, ...]}: for each interval string and trigger
kind, whether ``DataStreamWriter.trigger`` accepts it and the interval in ms the JVM's trigger then holds; for
each source, whether ``readStream.format(...).options(...).load()`` accepts its options.
"""

import json
import sys

import py4j.java_gateway
import py4j.protocol
from pyspark.sql import SparkSession

spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
# Refusals come back as py4j's own error: PySpark's conversion of each into its exception classes asks the
# JVM about 50 questions (20 ms) and changes only the error's type, never whether the call was refused.
py4j.java_gateway.get_return_value = py4j.protocol.get_return_value
questions = json.load(open(sys.argv[1], encoding="utf-8"))
writer = spark.readStream.format("rate").load().writeStream
jvm_trigger = spark._jvm.org.apache.spark.sql.streaming.Trigger
kinds = {
    "processingTime": lambda s: jvm_trigger.ProcessingTime(s).intervalMs(),
    "continuous": lambda s: jvm_trigger.Continuous(s).intervalMs(),
    "realTime": lambda s: jvm_trigger.RealTime(s).batchDurationMs(),
}
intervals = {}
for kind, held_ms in kinds.items():
    found = []
    for text in questions["intervals"]:
        try:
            writer.trigger(**{kind: text})
        except Exception:  # PySpark's check or the JVM's: refused either way
            found.append(None)
            continue
        found.append(int(held_ms(text.strip())))
    intervals[kind] = found
sources = []
for fmt, options in questions["sources"]:
    try:
        spark.readStream.format(fmt).options(**options).load()
        sources.append(True)
    except Exception:
        sources.append(False)
json.dump({"intervals": intervals, "sources": sources}, open(sys.argv[2], "w", encoding="utf-8"))
spark.stop()
