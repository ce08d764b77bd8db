"""Cost of `validate --analyze` on a folder of 50 specs: one JVM start for all, and each spec's marginal time.

The folder mixes what a fleet holds: SQL transforms over the rate source (filters, projections, one
aggregation with async off), and Kafka jobs (no connector here: their transforms are checked over the
stand-in source). The same analysis of one spec gives the fixed cost (Python, JVM and session start, the
analyzer's first use); the 50-spec run's extra time over it, divided by 49, is what a spec costs.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from airflow_async_stream.driver.analyze import analyze_specs
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec

SPECS = 50
KAFKA = {"format": "kafka", "options": {"kafka.bootstrap.servers": "broker:9092", "subscribe": "events"}}


def _spec(root: Path, i: int) -> JobSpec:
    spec: dict[str, Any] = {
        "name": f"job-{i:02d}",
        "checkpoint": str(root / f"job-{i:02d}"),
        "source": {"format": "rate", "options": {"rowsPerSecond": 10}},
        "sink": {"format": "noop"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 1000},
        "transform": {"sql": f"SELECT value * {i} AS v, timestamp FROM source WHERE value % {i + 2} = 0"},
    }
    if i % 5 == 0:
        spec["source"] = KAFKA
        spec["transform"] = {"sql": "SELECT CAST(key AS STRING) AS k, CAST(value AS STRING) AS v FROM source"}
    elif i % 7 == 0:
        spec["transform"] = {"sql": "SELECT value % 10 AS k, count(*) AS n FROM source GROUP BY 1"}
        spec["sink"] = {"format": "noop", "output_mode": "update"}
        spec["async_progress"] = {"enabled": False}
    return parse_spec(spec)


def run(log: Any = print) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="bench-analyze-"))
    specs = [(f"job-{i:02d}.yaml", _spec(root, i)) for i in range(SPECS)]
    clock = time.monotonic()
    one = analyze_specs(specs[1:2])
    one_s = time.monotonic() - clock
    clock = time.monotonic()
    many = analyze_specs(specs)
    many_s = time.monotonic() - clock
    wrong = [a for a in many.analyses if not a.ok]
    assert not wrong and not one.analyses[0].problems, f"a bench spec was refused: {wrong}"
    per_spec = [a.seconds for a in many.analyses]
    result = {
        "specs": SPECS,
        "one_spec_s": round(one_s, 2),
        "folder_s": round(many_s, 2),
        "spark_start_s": many.spark_start_seconds,
        "marginal_per_spec_s": round((many_s - one_s) / (SPECS - 1), 3),
        "spec_s_p50": statistics.median(per_spec),
        "spec_s_max": max(per_spec),
        "not_checked": sum(1 for a in many.analyses if a.not_checked),
    }
    log(
        f"analyze of {SPECS} specs: {many_s:.1f} s in one JVM (Spark up in {many.spark_start_seconds:.1f} s); one spec "
        f"alone {one_s:.1f} s; each further spec {result['marginal_per_spec_s']:.3f} s (p50 of a spec's own "
        f"{result['spec_s_p50']:.3f} s, max {result['spec_s_max']:.2f} s: the first)"
    )
    return result


if __name__ == "__main__":
    run()
