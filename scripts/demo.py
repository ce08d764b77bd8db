"""The main job: turn async progress tracking off for a running job, safely, through Airflow.

From nothing, on the embedded local Spark:
  1. start the clicks-async job with async progress tracking on and a 3 s checkpoint interval
     (DAG example_start_async_job), which leaves gaps in its offset and commit logs;
  2. show the inspector saying a direct synchronous restart is unsafe;
  3. run the safe-disable migration (DAG example_safe_disable), showing each step as it happens;
  4. show the inspector and the job's status after, each step's duration, then stop the job;
  5. print the commands that show the job again (by name, by checkpoint), which work from any shell.

Airflow state (SQLite) and checkpoints go under ./var/ unless AIRFLOW_HOME / ASYNC_STREAM_DEMO_ROOT say
otherwise.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
VAR = REPO / "var"
BIN = Path(sys.executable).parent
JOB = "clicks-async"
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


def run_dag(dag_id: str, env: dict[str, str], durations: dict[str, float]) -> int:
    """Run a DAG with `airflow dags test`, echoing task boundaries and our log lines as they come."""
    started: dict[str, float] = {}
    process = subprocess.Popen(
        [str(BIN / "airflow"), "dags", "test", dag_id],
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
            durations[match.group(1)] = took
            say(f"task {match.group(1)}: ended after {took:.1f} s")
        elif match := MESSAGE.search(line):
            say(f"  {match.group(1)}")
        else:
            print("    " + line.rstrip()[:300], flush=True)
    return process.wait()


def cli(env: dict[str, str], *args: str) -> int:
    print(flush=True)
    code = subprocess.run([str(BIN / "airflow-async-stream"), *args], env=env, check=False).returncode
    print(flush=True)
    return code


def main() -> int:
    began = time.time()
    env = environment()
    checkpoint = str(Path(env["ASYNC_STREAM_DEMO_ROOT"]) / JOB)
    Path(env["ASYNC_STREAM_DEMO_ROOT"]).mkdir(parents=True, exist_ok=True)
    say(f"Airflow home {env['AIRFLOW_HOME']}; checkpoint {checkpoint}")
    subprocess.run([str(BIN / "airflow"), "db", "migrate"], env=env, check=True, capture_output=True)

    say("1. starting the job with async progress tracking on, checkpoint interval 3000 ms")
    durations: dict[str, float] = {}
    if run_dag("example_start_async_job", env, durations) != 0:
        say("could not start the job")
        return 1
    say("2. the checkpoint now (a direct synchronous restart would fail):")
    cli(env, "inspect", checkpoint)

    say("3. the safe-disable migration")
    durations.clear()
    t0 = time.monotonic()
    code = run_dag("example_safe_disable", env, durations)
    total = time.monotonic() - t0
    say(f"4. migration {'succeeded' if code == 0 else 'FAILED'} in {total:.1f} s. Steps:")
    for step, took in durations.items():
        print(f"    {step:<45} {took:6.1f} s")
    say("the checkpoint after:")
    cli(env, "inspect", checkpoint)
    say("the job after:")
    cli(env, "status", checkpoint)
    say(longest_idle_text(checkpoint, began))
    say("stopping the job so nothing is left running:")
    cli(env, "stop", checkpoint)
    say(disk_use(checkpoint))
    say("to look at the job again, from any shell (its checkpoint and records stay under var/):")
    for command in look_commands(env, checkpoint):
        print(f"    {command}", flush=True)
    return code


def look_commands(env: dict[str, str], checkpoint: str) -> list[str]:
    """Commands that show the job this demo ran, as a user types them in a new shell. The job name is looked up
    in the registry of the Airflow that deployed it: this demo keeps it under var/, hence the variable."""
    tool = shlex.quote(str(BIN / "airflow-async-stream"))
    by_name = f"AIRFLOW_ASYNC_STREAM_HOME={shlex.quote(env['AIRFLOW_ASYNC_STREAM_HOME'])} {tool}"
    return [
        f"{by_name} status {JOB}",
        f"{tool} status {shlex.quote(checkpoint)}",
        f"{tool} inspect {shlex.quote(checkpoint)}",
        f"{tool} status {shlex.quote(checkpoint)} --json",
    ]


def longest_idle_text(checkpoint: str, since: float) -> str:
    """The stream's longest pause over this run of the demo (batches that started after ``since``: a run on an
    existing var/ continues the job of the run before, and the time between the two runs is not a pause of
    this one's), from the progress log's own timestamps."""
    from airflow_async_stream.insight.batches import batch_window, longest_idle, ran_a_batch
    from airflow_async_stream.state.control import ControlArea

    events = ControlArea.for_checkpoint(checkpoint).read_progress()
    found = longest_idle(e for e in events if ran_a_batch(e) and batch_window(e)[0] >= since)
    if found is None:
        return "fewer than two micro-batches in this run's progress log"
    idle, before, after = found
    return (
        f"longest idle time between consecutive micro-batches: {idle:.2f} s (after batch {before['batch_id']}, "
        f"before batch {after['batch_id']}; from the progress log's timestamps, this run's first batch to now)"
    )


def disk_use(checkpoint: str) -> str:
    """What the job keeps on disk beside its checkpoint: its driver logs and progress log (capped, see README)."""
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.state.progress_log import segments

    control = ControlArea.for_checkpoint(checkpoint)
    logs = [p for p in Path(control.root).glob("driver.log*") if p.is_file()]
    log_bytes = sum(p.stat().st_size for p in logs)
    progress = segments(control)
    batches = len(control.read_progress())
    return (
        f"on disk beside the checkpoint: driver logs {log_bytes / 1024:.1f} KB in {len(logs)} file(s) and a progress "
        f"log of {sum(s.size for s in progress) / 1024:.1f} KB, for {batches} micro-batches "
        f"({log_bytes / max(batches, 1):.0f} bytes of driver log per micro-batch)"
    )


if __name__ == "__main__":
    sys.exit(main())
