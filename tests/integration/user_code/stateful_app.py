"""An application whose query counts per key (stateful), which async progress tracking cannot run."""

from pyspark.sql import SparkSession

from airflow_async_stream.runtime import govern

spark = SparkSession.builder.getOrCreate()
counts = spark.readStream.format("rate").load().groupBy("value").count()
govern(counts.writeStream.format("noop").outputMode("update"))
