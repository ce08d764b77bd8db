"""An application with its own foreachBatch sink that writes down, per batch, the session setting it ran with
(to the file named by CONF_ECHO_OUT), so a test sees a switched spark.sql.* setting reach the batches."""

import json
import os

from pyspark.sql import SparkSession

from airflow_async_stream.runtime import govern

OUT = os.environ["CONF_ECHO_OUT"]


def echo(batch_df, batch_id):  # noqa: ANN001, ANN201 (Spark's callback)
    partitions = batch_df.sparkSession.conf.get("spark.sql.shuffle.partitions")
    with open(OUT, "a") as out:
        out.write(json.dumps({"batch_id": batch_id, "shuffle_partitions": int(partitions)}) + "\n")


spark = SparkSession.builder.getOrCreate()
stream = spark.readStream.format("rate").option("rowsPerSecond", "50").load()
govern(stream.writeStream.foreachBatch(echo))
