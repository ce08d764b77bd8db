"""Which query failures a restart inside the driver may cure, in the words Spark, Python and Kafka write."""

from __future__ import annotations

import pytest

from airflow_async_stream.insight.transient import transient_cause

TRANSIENT = {
    "org.apache.spark.SparkException: ... Caused by: java.net.ConnectException: Connection refused": "java.net.ConnectException",
    "pyspark.errors.exceptions.base.PySparkException: ... ConnectionRefusedError: [Errno 111] Connection refused": "ConnectionRefusedError",
    "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment": "org.apache.kafka.common.errors.TimeoutException",
    "java.net.UnknownHostException: broker-3.internal": "java.net.UnknownHostException",
    "com.amazonaws.services.s3.model.AmazonS3Exception: Please reduce your request rate. (Service: Amazon S3; Status Code: 503; Error Code: SlowDown)": "SlowDown",
}
PERMANENT = [
    "[UNRESOLVED_COLUMN.WITH_SUGGESTION] A column ... cannot be resolved",
    "java.lang.IllegalStateException: batch 7 doesn't exist",
    "Concurrent update to the commit log. Multiple streaming jobs detected for 12",
    "SparkConcurrentModificationException: Multiple streaming queries are concurrently using file:/ck/offsets. "
    "Caused by: java.net.SocketException",
    "java.lang.OutOfMemoryError: Java heap space",
    "[USER_RAISED_EXCEPTION] poisoned row SQLSTATE: P0001",
    "ValueError: the sink's schema has no column v",
    # permanent wins over a transient word in the same error
    "org.apache.spark.sql.AnalysisException: ... while retrying after java.net.ConnectException",
    "",
]


@pytest.mark.parametrize("error", sorted(TRANSIENT))
def test_a_peer_that_did_not_answer_for_a_moment_is_transient(error: str) -> None:
    assert transient_cause(error) == TRANSIENT[error]


@pytest.mark.parametrize("error", PERMANENT)
def test_a_failure_no_restart_cures_is_not(error: str) -> None:
    assert transient_cause(error) is None
