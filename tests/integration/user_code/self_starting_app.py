"""An application that starts its own query instead of handing its writer to govern()."""

import sys

from pyspark.sql import SparkSession

spark = SparkSession.builder.getOrCreate()
query = (
    spark.readStream.format("rate")
    .load()
    .writeStream.format("noop")
    .option("checkpointLocation", sys.argv[0] + ".checkpoint")  # beside this file: a started query would write it
    .start()
)
query.awaitTermination()
