"""Rules by the Spark a spec is judged for (spec/versions.py): real-time mode and async progress tracking as
each line has them, the setting that names the Spark where none is at hand, and each line's facts read again
from its own jars where it is installed (the venv's pyspark, and scripts/sparks.sh's lines)."""

from __future__ import annotations

import json
import zipfile
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.exceptions import SettingsError, SpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.rules import SINK_EVOLUTION, violations_on
from airflow_async_stream.spec.versions import LINES, SPARK_VERSION_ENV, judged, judging, line_of
from tests.helpers import rate_noop, real_time
from tests.integration.sparks import EVERY_SPARK, ROOT

ASYNC_AT = {
    "interval 0": {"enabled": True, "checkpoint_interval_ms": 0},
    "interval 1000": {"enabled": True, "checkpoint_interval_ms": 1000},
}


def _fields(spec: dict[str, Any], version: str) -> dict[str, str]:
    with judging(version, "a test"):
        try:
            parse_spec(spec)
        except SpecError as exc:
            return dict(exc.problems)
    return {}


@pytest.mark.parametrize("version", ["3.5.9", "4.0.5", "4.1.4"])
def test_lines_without_real_time_in_pyspark_refuse_the_trigger(version: str) -> None:
    assert _fields(real_time(), version) == {
        "trigger.real_time": f"Spark {version} has no real-time mode in PySpark (trigger(realTime=...) is 4.2+)"
    }


def test_async_in_real_time_mode_is_refused_by_42_and_only_at_interval_0_by_43() -> None:
    for async_progress in ASYNC_AT.values():
        refused = _fields(real_time(async_progress=async_progress), "4.2.0")
        assert "ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED" in refused["trigger.real_time"], refused
    assert _fields(real_time(async_progress=ASYNC_AT["interval 0"]), "4.3.0") == {}
    refused = _fields(real_time(async_progress=ASYNC_AT["interval 1000"]), "4.3.0")
    assert "CHECKPOINTING_INTERVAL_NON_ZERO" in refused["async_progress.checkpoint_interval_ms"], refused
    assert _fields(real_time(), "4.3.0") == _fields(real_time(), "4.2.0") == {}


def test_sink_evolution_refuses_async_from_42() -> None:
    spec = rate_noop("evolving", async_progress={"enabled": True}, spark_conf={SINK_EVOLUTION: "true"})
    assert _fields(spec, "3.5.9") == _fields(spec, "4.1.4") == {}  # no such setting before 4.2
    for version in ("4.2.0", "4.3.0"):
        assert "STREAMING_QUERY_EVOLUTION_ERROR" in _fields(spec, version)[f"spark_conf.{SINK_EVOLUTION}"]
    synchronous = parse_spec(rate_noop("evolving", spark_conf={SINK_EVOLUTION: "true"}))
    assert violations_on(synchronous, "4.3.0", "a test") == []


def test_the_spark_judged_for_comes_from_the_context_the_setting_or_the_installed_pyspark(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(SPARK_VERSION_ENV, raising=False)
    assert judged()[1:] == (metadata.version("pyspark"), "the installed pyspark")
    monkeypatch.setenv(SPARK_VERSION_ENV, "3.5.9")
    assert judged()[1:] == ("3.5.9", SPARK_VERSION_ENV) and "trigger.real_time" in _fields(real_time(), "3.5.9")
    with judging("4.3.0", "validate --spark-version"):
        assert judged()[1:] == ("4.3.0", "validate --spark-version")
    for bad, said in (("4.x", "is not a Spark version"), ("3.4.4", "is not a line this release supports")):
        monkeypatch.setenv(SPARK_VERSION_ENV, bad)
        with pytest.raises(SettingsError, match=rf"{SPARK_VERSION_ENV}: .*{said}"):
            judged()


def _installed_jars(version: str) -> Path | None:
    if version == metadata.version("pyspark"):
        import pyspark

        return Path(pyspark.__file__).parent / "jars"
    jars = ROOT / version / "pyspark" / "jars"
    return jars if jars.is_dir() else None


def _strings(jar: Path, member: str) -> bytes:
    with zipfile.ZipFile(jar) as archive:
        return archive.read(member)


@pytest.mark.parametrize("version", sorted({*EVERY_SPARK, "4.0.5", "4.1.4"}))
def test_each_lines_facts_are_what_its_own_jars_say(version: str) -> None:
    jars = _installed_jars(version)
    if jars is None:
        pytest.skip(f"Spark {version} is not installed here (bash scripts/sparks.sh {version})")
    line = line_of(version)
    [core] = jars.glob("spark-core_*.jar")
    assert core.name.startswith(f"spark-core_{line.scala}-"), core.name
    [catalyst] = jars.glob("spark-catalyst_*.jar")
    conf = _strings(catalyst, "org/apache/spark/sql/internal/SQLConf$.class")
    assert (SINK_EVOLUTION.encode() in conf) == line.sink_evolution
    by_default = b"spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled" in conf
    assert by_default == (line.real_time == "async_at_interval_0")
    readwriter = (jars.parent / "sql" / "streaming" / "readwriter.py").read_text()
    assert ("realTime: Optional[str]" in readwriter) == (line.real_time is not None)
    if line.real_time is not None:
        [common] = jars.glob("spark-common-utils_*.jar")
        errors = json.loads(_strings(common, "error/error-conditions.json"))
        real_time_errors = errors.get("STREAMING_REAL_TIME_MODE", {}).get("subClass", {})
        assert ("ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED" in real_time_errors) == (line.real_time == "refuses_async")
        non_zero = "ASYNC_PROGRESS_TRACKING_CHECKPOINTING_INTERVAL_NON_ZERO" in real_time_errors
        assert non_zero == (line.real_time == "async_at_interval_0")
    assert set(LINES) >= {line.line}
