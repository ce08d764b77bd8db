"""The spec's checks agree with PySpark itself (a JVM): on every interval string (what Spark accepts is
accepted with the same milliseconds, what it refuses is refused, for each trigger kind) and on every option
value of the rate sources."""

from __future__ import annotations

import json
import random
from importlib.metadata import version
from pathlib import Path

import pytest

from airflow_async_stream.spec.endpoints import Source
from airflow_async_stream.spec.intervals import SPARK_INTERVALS_READ_FROM, IntervalError, interval_ms
from airflow_async_stream.spec.options import option_violations
from airflow_async_stream.spec.versions import line_of
from tests.integration.sparks import EVERY_SPARK, run_script

pytestmark = pytest.mark.integration

SCRIPT = Path(__file__).parent / "spark_scripts" / "spark_accepts.py"

#: Forms users write, Spark's corners (signs, fractions, prefixes, overflow, whitespace, case, non-ASCII).
WRITTEN = [
    "5 seconds",
    "500 milliseconds",
    "1 second",
    "1 Second",
    "INTERVAL 1 HOUR",
    "interval 2 seconds",
    "1 minute 30 seconds",
    "2 weeks 1 day",
    "1 hour 1 minute 1 second 1 millisecond 1 microsecond",
    "0 seconds",
    "2s",
    "500 ms",
    "5 sec",
    "3 mins",
    "1 millis",
    "1 nanosecond",
    "soon",
    "",
    "   ",
    "-5 seconds",
    "- 5 seconds",
    "+5 seconds",
    "-0 seconds",
    "5 secondss",
    "5 hours,",
    "5seconds",
    "1 month",
    "1 year -12 months",
    "0 months 5 seconds",
    "interval",
    "interval ",
    "intervalx 5 seconds",
    "interval5 seconds",
    ".5 seconds",
    ". seconds",
    "5. seconds",
    "1.5 minutes",
    "0.000001 seconds",
    "0.0000001 seconds",
    "0.0005 seconds",
    "-0.0005 seconds",
    "1.0000000001 seconds",
    "1 minute -59.9995 seconds",
    "5\tseconds",
    "5\nseconds",
    "\u00a05 seconds",
    "5\u00a0seconds",
    "\u2003 5 seconds",
    "\x1c5 seconds",
    "5 seconds\x1f",
    "\x855 seconds",
    "\u0130nterval 1 second",
    "1 \u212aseconds",
    "9223372036854775807 microseconds",
    "9223372036854775808 microseconds",
    "2147483647 days",
    "2147483648 days",
    "106751991 days",
    "106752 days",
    "1 second -",
    "1 second +",
    "5",
    "seconds",
    "1 1 seconds",
    "1 hour 2",
]
_TOKENS = [
    "1",
    "5",
    "-2",
    "+3",
    "0",
    ".5",
    "2.25",
    "7.",
    "interval",
    "second",
    "seconds",
    "minute",
    "hours",
    "day",
    "days",
    "week",
    "month",
    "year",
    "millisecond",
    "microseconds",
    "ms",
    "s",
    " ",
    "  ",
    "\t",
    "x",
    "-",
    ",",
]


def _generated(count: int) -> list[str]:
    """Strings put together from interval tokens, mostly near-valid (a fixed seed: the same list each run)."""
    rng = random.Random(44)
    return [
        "".join(rng.choice(_TOKENS) + rng.choice(["", " ", " "]) for _ in range(rng.randint(1, 6)))
        for _ in range(count)
    ]


def _checker(text: str, positive: bool) -> int | None:
    try:
        return interval_ms(text, positive=positive)
    except IntervalError:
        return None


def test_the_checker_follows_the_pyspark_release_the_runtime_carries() -> None:
    assert version("pyspark") == SPARK_INTERVALS_READ_FROM, "re-read Spark's interval parser for this release"


_RATE_VALUES = [
    "1",
    "0",
    "-3",
    "+5",
    "007",
    "1.5",
    "fast",
    "",
    " 5",
    "true",
    "2147483647",
    "2147483648",
    "9223372036854775808",
    "5s",
    "-1s",
    "2min",
    "2MIN",
    "10 s",
    "1h",
    "3us",
    "1d",
    "5 seconds",
    "\u0663",
]
_RATE_OPTIONS = {
    "rate": ("rowsPerSecond", "numPartitions", "rampUpTime"),
    "rate-micro-batch": ("rowsPerBatch", "numPartitions", "startTimestamp", "advanceMillisPerBatch"),
}


def _sources() -> list[tuple[str, dict[str, str]]]:
    base = {"rate": {}, "rate-micro-batch": {"rowsPerBatch": "5"}}
    return [
        (fmt, {**base[fmt], option: value})
        for fmt, options in _RATE_OPTIONS.items()
        for option in options
        for value in _RATE_VALUES
    ] + [("rate-micro-batch", {})]


def _ask_spark(tmp_path: Path, strings: list[str], sources: list[tuple[str, dict[str, str]]], spark: str) -> dict:
    (tmp_path / "questions.json").write_text(json.dumps({"intervals": strings, "sources": sources}))
    run_script(spark, SCRIPT, str(tmp_path / "questions.json"), str(tmp_path / "answers.json"))
    return json.loads((tmp_path / "answers.json").read_text())


@pytest.mark.parametrize("spark", EVERY_SPARK)
def test_the_checks_and_pyspark_agree_on_every_interval_and_rate_option(tmp_path: Path, spark: str) -> None:
    """On every Spark line tested: the parser was read from 4.2.0 and agrees with 3.5.9 and 4.3.0 too (a line
    without real-time mode in PySpark refuses that trigger: the rules refuse it first, spec/versions.py)."""
    # Every string on the embedded Spark; the written ones and a quarter of the generated on the other lines.
    strings, sources = WRITTEN + _generated(400 if spark == EVERY_SPARK[0] else 100), _sources()
    answers = _ask_spark(tmp_path, strings, sources, spark)

    spark_said = answers["intervals"]
    kinds = (
        ("processingTime", "continuous", "realTime") if line_of(spark).real_time else ("processingTime", "continuous")
    )
    disagree = [
        (kind, text, spark_said[kind][i], _checker(text, positive=kind == "realTime"))
        for kind in kinds
        for i, text in enumerate(strings)
        if spark_said[kind][i] != _checker(text, positive=kind == "realTime")
    ]
    assert disagree == [], disagree[:20]
    accepted = sum(ms is not None for ms in spark_said["processingTime"])
    assert 30 < accepted < len(strings) - 30, "the list must hold many of both kinds"

    ours = [not option_violations(Source(format=fmt, options=options), None) for fmt, options in sources]
    assert [(s, a) for s, a, o in zip(sources, answers["sources"], ours, strict=True) if a != o] == []
    assert 20 < sum(ours) < len(sources) - 20, "the list must hold many of both kinds"
