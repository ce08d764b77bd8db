"""Rules by the Spark a spec is judged for (spec/versions.py): real-time mode and async progress tracking as
each line has them, and the setting that names the Spark where none is at hand. (Each line's facts are read
again from its own jars in tests/integration/test_spark_versions.py.)"""

from __future__ import annotations

from importlib import metadata
from typing import Any

import pytest

from airflow_async_stream.exceptions import SettingsError, SpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.rules import SINK_EVOLUTION, violations_on
from airflow_async_stream.spec.versions import SPARK_VERSION_ENV, judged, judging
from tests.helpers import rate_noop, real_time

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
