"""Builders both tiers share: the job spec most tests run (rate -> noop), hand-made checkpoints and their
fingerprint, and awaiting a condition."""

from __future__ import annotations

import hashlib
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from airflow_async_stream.spec.load import deep_merge

if TYPE_CHECKING:
    from airflow_async_stream.spec.model import JobSpec
    from airflow_async_stream.state.control import ControlArea


def rate_noop(
    name: str = "job", checkpoint: str | None = None, rows: int | None = None, **changes: Any
) -> dict[str, Any]:
    """A job spec mapping: the rate source into the noop sink (the main job's shape), checkpoint ``/ck/<name>``
    unless given, ``rows`` per second if given, and ``changes`` merged in field by field."""
    spec: dict[str, Any] = {
        "name": name,
        "checkpoint": checkpoint if checkpoint is not None else f"/ck/{name}",
        "source": {"format": "rate"},
        "sink": {"format": "noop"},
    }
    if rows is not None:
        spec["source"]["options"] = {"rowsPerSecond": rows}
    return deep_merge(spec, changes)


def real_time(**changes: Any) -> dict[str, Any]:
    """A job spec mapping Spark runs in real-time mode (Kafka to Kafka, update mode), fields replaced by ``changes``."""
    spec: dict[str, Any] = {
        "name": "clicks-real-time",
        "checkpoint": "/data/ck/clicks-real-time",
        "source": {"format": "kafka", "options": {"subscribe": "clicks"}, "connection": "kafka_default"},
        "transform": {"sql": "SELECT key, value FROM source WHERE value IS NOT NULL"},
        "sink": {"format": "kafka", "options": {"topic": "alerts"}, "output_mode": "update"},
        "trigger": {"real_time": "5 seconds"},
    }
    spec.update(changes)
    return spec


OFFSETS = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1,"conf":{}}\n{"0":5}\n'
COMMITS = 'v1\n{"nextBatchWatermarkMs":0}\n'


def make_checkpoint(root: Path, offsets: list[int], commits: list[int], extra: dict[str, str] | None = None) -> str:
    """A checkpoint folder laid out as Spark writes it, with these batch ids in ``offsets/`` and ``commits/``."""
    (root / "offsets").mkdir(parents=True)
    (root / "commits").mkdir()
    (root / "metadata").write_text('{"id":"q"}')
    for i in offsets:
        (root / "offsets" / str(i)).write_text(OFFSETS)
    for i in commits:
        (root / "commits" / str(i)).write_text(COMMITS)
    for name, text in (extra or {}).items():
        (root / name).write_text(text)
    return str(root)


def snapshot(root: Path) -> dict[str, str]:
    """Every file under ``root`` by relative path, with its content's hash: equal snapshots, unchanged files."""
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in root.rglob("*") if p.is_file()
    }


def commit(checkpoint: str, batch: int) -> None:
    """Commit ``batch`` in a checkpoint ``make_checkpoint`` made, as Spark does when the batch ends."""
    Path(checkpoint, "commits", str(batch)).write_text(COMMITS)


def until(
    condition: Callable[[], Any],
    timeout_s: float = 10.0,
    what: str = "the condition",
    alive: subprocess.Popen[Any] | None = None,
    every_s: float = 0.02,
) -> Any:
    """Await ``condition``'s first truthy value: the tests' one way to wait. Fails naming ``what`` when
    ``timeout_s`` passes first, or at once when the process ``alive`` names (the one that should make it
    true) has exited."""
    deadline = time.monotonic() + timeout_s
    while not (value := condition()):
        assert alive is None or alive.poll() is None, f"{what}: the process ended (exit {alive.returncode})"
        assert time.monotonic() < deadline, f"{what}: not met within {timeout_s:.0f} s"
        time.sleep(every_s)
    return value


def deployed(control: ControlArea, spec: dict[str, Any] | JobSpec, deployment_id: str = "d1") -> JobSpec:
    """``spec.json`` as a deploy writes it, and the spec kept on this host as the deploy keeps it
    (state/issued.py): what a test's hand-made job needs before it is switched, resumed or tuned."""
    from airflow_async_stream.spec.load import parse_spec
    from airflow_async_stream.state import issued

    parsed = parse_spec(spec)
    control.ensure()
    control.write_bytes(control.SPEC, parsed.to_json_bytes())
    issued.keep(parsed, deployment_id, "deploy")
    return parsed
