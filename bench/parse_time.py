"""Parse time of every example DAG in a fresh interpreter, beyond importing Airflow itself."""

from __future__ import annotations

import json
import statistics
from typing import Any

from bench.common import REPO, run_json

PROBE = """
import json, runpy, sys, time
t0 = time.perf_counter()
import airflow.sdk
t1 = time.perf_counter()
runpy.run_path(sys.argv[1])
t2 = time.perf_counter()
print(json.dumps({"airflow_s": t1 - t0, "dag_s": t2 - t1, "pyspark_imported": "pyspark" in sys.modules}))
"""
REPEAT = 3


def run(log: Any = print) -> dict[str, Any]:
    result = {}
    for path in sorted((REPO / "dags").glob("*.py")):
        samples = [run_json(["-c", PROBE, str(path)])[0] for _ in range(REPEAT)]
        entry = {
            "beyond_airflow_s": statistics.median(s["dag_s"] for s in samples),
            "airflow_import_s": statistics.median(s["airflow_s"] for s in samples),
            "pyspark_imported": any(s["pyspark_imported"] for s in samples),
        }
        result[path.name] = entry
        log(
            f"parse {path.name:<32} {entry['beyond_airflow_s']:.2f} s beyond Airflow "
            f"({entry['airflow_import_s']:.2f} s for Airflow); pyspark imported: {entry['pyspark_imported']}"
        )
    return json.loads(json.dumps(result))
