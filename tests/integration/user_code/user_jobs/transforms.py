"""A user's entrypoint transform, as a team would write it: build(spark, source_df) -> streaming DataFrame."""

from pyspark.sql import functions as F


def evens(spark, source_df):
    return source_df.where("value % 2 = 0").withColumn("tag", F.lit("from-entrypoint"))


def misnamed(spark, source_df):
    """A transform with a mistake `validate --analyze` finds: a column the rate source does not have."""
    return source_df.select("valeu")


def counts(spark, source_df):
    """Counts per key: an aggregation, which real-time mode and async progress tracking both refuse."""
    return source_df.groupBy("key").count()


def gated(spark, source_df):
    """Each row waits while the file named by HEALTH_GATE exists: a batch that blocks until the test lets it go."""
    import os
    import time

    gate = os.environ["HEALTH_GATE"]

    @F.udf("long")
    def wait_at_gate(value):
        while os.path.exists(gate):
            time.sleep(0.05)
        return value

    return source_df.withColumn("value", wait_at_gate("value"))


def slowed(spark, source_df):
    """Each partition of each batch waits the milliseconds written in the file SLOW_BATCH_FILE names (none while
    it is missing or empty): a batch made long, or a regression a test injects at the moment it picks."""
    import os
    import time

    path = os.environ["SLOW_BATCH_FILE"]

    def wait(batches):
        try:
            with open(path) as said:
                time.sleep(float(said.read().strip() or 0) / 1000)
        except FileNotFoundError:
            pass
        yield from batches

    return source_df.mapInArrow(wait, source_df.schema)
