"""The Spark lines users run, each a real Spark of its own used as SPARK_HOME (tests/integration/sparks.py): one
driver per line, deployed with async on, switched in place, safe-disabled in place, and stopped cleanly; and the
inspector's verdict against each line's own synchronous restart, over every log format it writes; and what
spec/versions.py says of each line, read again from that line's own jars (no JVM)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.insight.batches import continuity_problems
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.rules import SINK_EVOLUTION
from airflow_async_stream.spec.versions import line_of
from airflow_async_stream.state.checkpoint import batch_ids, inspect_checkpoint
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.requests import SwitchOutcome
from airflow_async_stream.switch.request import switch_in_place
from tests.helpers import rate_noop, until
from tests.integration.sparks import EVERY_SPARK, OTHER_SPARKS, launcher_for, spark_home, submit

pytestmark = pytest.mark.integration
CLI = str(Path(sys.executable).parent / "airflow-async-stream")
VERDICTS = Path(__file__).resolve().parent / "spark_scripts" / "restart_verdicts.py"
LISTENER = Path(__file__).resolve().parent / "spark_scripts" / "listener_events.py"


@pytest.mark.parametrize("version", OTHER_SPARKS)
def test_deploy_switch_migrate_and_stop(version: str, airflow_db: None, checkpoint_dir: str) -> None:
    name = f"spark-{version.replace('.', '-')}"
    mapping = rate_noop(
        name,
        checkpoint_dir,
        rows=200,
        trigger={"processing_time": "100 milliseconds"},
        async_progress={"enabled": True, "checkpoint_interval_ms": 3000},
    )
    spec = parse_spec(mapping)
    settings = DeploySettings(launcher=launcher_for(version), startup_timeout_s=180)
    control = ControlArea.for_checkpoint(checkpoint_dir)
    deployed = deploy_job(spec, Holder.this_process("test"), settings)
    assert control.read_status().spark_version == version  # the driver says which Spark it runs on
    shown = subprocess.run([CLI, "status", name], capture_output=True, text=True, timeout=120)
    assert f", Spark {version})" in shown.stdout, shown.stdout + shown.stderr
    # The deploy judges by the Spark it submits to: real-time mode is refused on 3.5 before anything is submitted.
    real_time = deep_merge(mapping, {"name": f"{name}-rt", "checkpoint": f"{checkpoint_dir}-rt"})
    real_time.update(
        source={"format": "kafka", "options": {"subscribe": "t", "kafka.bootstrap.servers": "127.0.0.1:9"}},
        sink={"format": "console", "output_mode": "update"},
        trigger={"real_time": "5 seconds"},
        async_progress={"enabled": False},
    )
    if version.startswith("3."):
        with pytest.raises(SpecError, match=rf"for Spark {version}: trigger.real_time: Spark {version} has no real"):
            deploy_job(parse_spec(real_time), Holder.this_process("test"), settings)
        assert not ControlArea.for_checkpoint(f"{checkpoint_dir}-rt").exists()
    until(lambda: not inspect_checkpoint(checkpoint_dir).sync_restart_safe, 90, what="a gap in the offset log")

    # An in-place switch: the driver stops its query between batches and starts the new one.
    slower = parse_spec(deep_merge(mapping, {"trigger": {"processing_time": "200 milliseconds"}}))
    switched = switch_in_place(control, slower, timeout_s=90)
    assert switched.outcome == SwitchOutcome.SWITCHED, switched

    # The safe-disable migration, in place: async at interval 0, two batches, the gate, synchronous.
    stages = run_safe_disable(SafeDisable(spec=slower, deploy=settings, wait_timeout_s=120))
    assert [stage.how for stage in stages] == ["in_place", "in_place"], stages
    status = control.read_status()
    assert status.deployment_id == deployed.deployment_id and status.state == "running", status
    assert status.configuration["async_progress"]["enabled"] is False
    assert inspect_checkpoint(checkpoint_dir).sync_restart_safe

    stopped = subprocess.run([CLI, "stop", name], capture_output=True, text=True, timeout=180)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    final = control.read_status()
    assert final.state == "stopped" and not final.error, final
    events = control.read_progress(deployed.deployment_id)
    assert events and not continuity_problems(events), continuity_problems(events)
    assert batch_ids(checkpoint_dir, "commits")[-1] >= events[-1]["batch_id"]


@pytest.mark.parametrize("version", EVERY_SPARK)
def test_the_inspector_agrees_with_each_sparks_own_restart(version: str, tmp_path: Path) -> None:
    seen = submit(version, VERDICTS, str(tmp_path))
    assert seen["spark"] == version
    gaps = seen["gaps"]  # UNSAFE, and this Spark fails on exactly the batch the inspector names
    missing = gaps["reason"].split(" is missing")[0].removeprefix("offsets/")
    assert not gaps["safe"] and missing.isdigit(), gaps["reason"]
    spark_said = re.compile(rf"batch {missing} doesn't exist|Previous batch {missing} not found in offset log")
    assert spark_said.search(gaps["error"] or ""), gaps  # Spark names it either way, as the reason says
    cured = seen["cured"]  # SAFE after the cure, and this Spark resumes synchronously
    assert cured["safe"] and cured["error"] is None and len(cured["ran"]) >= 2, cured
    if version.startswith("3."):
        assert "v2" not in seen
        return
    v2 = seen["v2"]  # Spark 4.x's commit log v2 (and offsets v2 where it writes them): SAFE, and it resumes
    assert v2["headers"]["commits"] == ["v2"], v2
    assert v2["safe"] and v2["error"] is None and len(v2["ran"]) >= 2, v2


def _member(jar: Path, member: str) -> bytes:
    with zipfile.ZipFile(jar) as archive:
        return archive.read(member)


@pytest.mark.parametrize("version", EVERY_SPARK)
def test_each_lines_facts_are_what_its_own_jars_say(version: str) -> None:
    jars = spark_home(version) / "jars"
    line = line_of(version)
    [core] = jars.glob("spark-core_*.jar")
    assert core.name.startswith(f"spark-core_{line.scala}-"), core.name
    [catalyst] = jars.glob("spark-catalyst_*.jar")
    conf = _member(catalyst, "org/apache/spark/sql/internal/SQLConf$.class")
    assert (SINK_EVOLUTION.encode() in conf) == line.sink_evolution
    by_default = b"spark.sql.streaming.realTimeMode.asyncProgressTrackingByDefault.enabled" in conf
    assert by_default == (line.real_time == "async_at_interval_0")
    readwriter = (jars.parent / "sql" / "streaming" / "readwriter.py").read_text()
    assert ("realTime: Optional[str]" in readwriter) == (line.real_time is not None)
    if line.real_time is not None:
        [common] = jars.glob("spark-common-utils_*.jar")
        errors = json.loads(_member(common, "error/error-conditions.json"))
        real_time_errors = errors.get("STREAMING_REAL_TIME_MODE", {}).get("subClass", {})
        assert ("ASYNC_PROGRESS_TRACKING_NOT_SUPPORTED" in real_time_errors) == (line.real_time == "refuses_async")
        non_zero = "ASYNC_PROGRESS_TRACKING_CHECKPOINTING_INTERVAL_NON_ZERO" in real_time_errors
        assert non_zero == (line.real_time == "async_at_interval_0")


@pytest.mark.parametrize("version", EVERY_SPARK[:2])  # the venv's line and the oldest other (3.5: dicts)
def test_the_listener_reads_each_event_in_two_calls_and_records_what_pysparks_own_does(
    version: str, tmp_path: Path
) -> None:
    """PySpark's listener converts an event field by field, a py4j call each, on Spark's listener thread (about
    200 to 450 a progress event here, which cost a 100 ms driver more CPU than its batches); ours reads its JSON."""
    seen = submit(version, LISTENER, str(tmp_path / "ck"))
    assert seen["spark"] == version
    assert len(seen["calls"]["ours"]) >= 20 and max(seen["calls"]["ours"]) <= 2, seen["calls"]["ours"]
    pysparks = sorted(seen["calls"]["pyspark"])  # what the two calls replace (a sparse event: about 20)
    assert pysparks[0] > max(seen["calls"]["ours"]) and pysparks[len(pysparks) // 2] > 100, pysparks
    assert seen["compared"] >= 15
    for batch in seen["differ"]:  # only the first batch's start offset: Spark's JSON null, PySpark's str(null)
        assert batch == {"batch_id": 0, "fields": {".sources[0].start_offset": ["null", '"None"']}}, batch
