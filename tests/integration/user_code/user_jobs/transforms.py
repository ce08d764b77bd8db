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
