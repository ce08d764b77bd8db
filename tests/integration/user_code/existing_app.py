"""An existing PySpark application, changed only to hand its writer to the runtime's govern()."""

from pyspark.sql import SparkSession

from airflow_async_stream.runtime import govern

spark = SparkSession.builder.getOrCreate()
stream = spark.readStream.format("rate").option("rowsPerSecond", "200").load()
writer = stream.selectExpr("value * 10 AS value").writeStream.format("noop")
govern(writer)
