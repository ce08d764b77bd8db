"""A governed application whose sink proves which secret it received, without ever writing the secret.

The sink is a Python data source: each committed batch writes the SHA-256 of its ``auth.token`` option
into ``proof_dir``. The spec gives ``auth.token`` through ``secret_options`` (an Airflow connection).
"""

import hashlib
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql.datasource import DataSource, DataSourceStreamWriter, WriterCommitMessage

from airflow_async_stream.runtime import govern


class SecretEchoSink(DataSource):
    @classmethod
    def name(cls) -> str:
        return "secret_echo"

    def streamWriter(self, schema, overwrite):  # noqa: N802 (Spark's name)
        return _ProofWriter(dict(self.options))


class _ProofWriter(DataSourceStreamWriter):
    def __init__(self, options: dict) -> None:
        self.options = options

    def write(self, iterator):
        for _ in iterator:
            pass
        return WriterCommitMessage()

    def commit(self, messages, batchId):  # noqa: N803 (Spark's name)
        proof = Path(self.options["proof_dir"])
        proof.mkdir(parents=True, exist_ok=True)
        token = self.options.get("auth.token", "")
        (proof / f"{batchId}.sha256").write_text(hashlib.sha256(token.encode()).hexdigest())

    def abort(self, messages, batchId):  # noqa: N803
        pass


spark = SparkSession.builder.getOrCreate()
spark.dataSource.register(SecretEchoSink)
stream = spark.readStream.format("rate").option("rowsPerSecond", "50").load()
govern(stream.writeStream.format("secret_echo"))
