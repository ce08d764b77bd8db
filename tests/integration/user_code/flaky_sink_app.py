"""A governed application whose sink is unreachable for a moment when a flag file says so.

The sink is a Python data source; its option ``flag`` names the flag file. ``refuse`` in it: the next batch's
commit fails once with ConnectionRefusedError (the flag is removed as it fails: a sink briefly unreachable; the
moment it failed is written beside it, ``<flag>.failed-at``);
``reject``: every commit fails with a ValueError (a permanent error).
"""

import time
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage

from airflow_async_stream.runtime import govern


class FlakySink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "flaky"

    def streamWriter(self, schema, overwrite):  # noqa: N802 (Spark's name)
        return _FlakyWriter(Path(dict(self.options)["flag"]))


class _FlakyWriter(DataSourceStreamWriter):
    def __init__(self, flag: Path) -> None:
        self.flag = flag

    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages, batchId):  # noqa: N803 (Spark's name)
        said = self.flag.read_text().strip() if self.flag.exists() else ""
        if said == "refuse":
            self.flag.with_name(self.flag.name + ".failed-at").write_text(repr(time.time()))  # for bench/
            self.flag.unlink()
            raise ConnectionRefusedError(111, "Connection refused: the sink at 127.0.0.1:9 did not answer")
        if said == "reject":
            raise ValueError("the sink rejects the batch: its schema has no column value")

    def abort(self, messages, batchId):  # noqa: N803
        pass


spark = SparkSession.builder.getOrCreate()
spark.dataSource.register(FlakySink)
govern(spark.readStream.format("rate").option("rowsPerSecond", "20").load().writeStream.format("flaky"))
