"""The main job: run the example DAG through Airflow on the embedded local Spark, showing progress.

Airflow state (SQLite) and checkpoints go under ./var/ unless AIRFLOW_HOME / ASYNC_STREAM_DEMO_ROOT say
otherwise. Prints each task's outcome and duration as it happens, then the job's final status.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VAR = REPO / "var"
BIN = Path(sys.executable).parent
DAG_ID = "example_deploy_stop"
# Lines worth showing from `airflow dags test`: task boundaries, our operators' messages, errors.
SHOW = re.compile(
    r"\[DAG TEST\] (starting task_id|end task)|airflow_async_stream|Task failed|Traceback|Error|DagRun Finished"
)
TASK_START = re.compile(r"\[DAG TEST\] starting task_id=(\S+)")
TASK_END = re.compile(r"\[DAG TEST\] end task task_id=(\S+)")
MESSAGE = re.compile(r"\[(?:info|warning|error)\s*\]\s+(.*?)\s+\[airflow\.task\.")


def environment() -> dict[str, str]:
    env = dict(os.environ)
    env.setdefault("AIRFLOW_HOME", str(VAR / "airflow-home"))
    env.setdefault("ASYNC_STREAM_DEMO_ROOT", str(VAR / "checkpoints"))
    env.setdefault("AIRFLOW_ASYNC_STREAM_HOME", str(VAR / "registry"))
    env["AIRFLOW__CORE__DAGS_FOLDER"] = str(REPO / "dags")
    env["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    return env


def say(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def run_dag(env: dict[str, str]) -> int:
    """Run the DAG with `airflow dags test`, echoing task boundaries and our log lines as they come."""
    started: dict[str, float] = {}
    process = subprocess.Popen(
        [str(BIN / "airflow"), "dags", "test", DAG_ID],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    assert process.stdout is not None
    for line in process.stdout:
        if not SHOW.search(line):
            continue
        if match := TASK_START.search(line):
            started[match.group(1)] = time.monotonic()
            say(f"task {match.group(1)}: started")
        elif match := TASK_END.search(line):
            took = time.monotonic() - started.get(match.group(1), time.monotonic())
            say(f"task {match.group(1)}: ended after {took:.1f} s")
        elif match := MESSAGE.search(line):
            say(f"  {match.group(1)}")
        else:
            print("    " + line.rstrip()[:300], flush=True)
    return process.wait()


def main() -> int:
    env = environment()
    Path(env["ASYNC_STREAM_DEMO_ROOT"]).mkdir(parents=True, exist_ok=True)
    say(f"Airflow home {env['AIRFLOW_HOME']}; checkpoints under {env['ASYNC_STREAM_DEMO_ROOT']}")
    subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)
    say(f"running DAG {DAG_ID} through Airflow on the embedded local Spark")
    t0 = time.monotonic()
    code = run_dag(env)
    say(f"DAG {'succeeded' if code == 0 else 'FAILED'} in {time.monotonic() - t0:.1f} s; final job status:")
    checkpoint = str(Path(env["ASYNC_STREAM_DEMO_ROOT"]) / "rate-to-noop")
    subprocess.run([str(BIN / "airflow-async-stream"), "status", checkpoint], env=env, check=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
