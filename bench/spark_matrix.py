"""The support matrix, measured: on each Spark line (pip's pyspark as SPARK_HOME, scripts/sparks.sh installs
them), one job deployed with async on, switched in place, safe-disabled in place and stopped; the inspector's
verdict against that Spark's own synchronous restart; and how a real-time spec is judged for it.

    bash scripts/sparks.sh 3.5.9 4.0.5 4.1.4 4.3.0
    .venv/bin/python -m bench.spark_matrix [VERSION ...]     # default: 3.5.9 4.0.5 4.1.4 4.2.0 4.3.0

Writes bench/results/spark_matrix.json and prints the README's table (Markdown). Each cell says what happened.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from importlib import metadata
from pathlib import Path
from typing import Any

from bench.common import REPO

TMP = Path(tempfile.mkdtemp(prefix="bench-sparks-"))
os.environ.setdefault("AIRFLOW_ASYNC_STREAM_HOME", str(TMP / "registry"))

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job  # noqa: E402
from airflow_async_stream.driver.local import LocalLauncher  # noqa: E402
from airflow_async_stream.migrations.in_process import run_safe_disable  # noqa: E402
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable  # noqa: E402
from airflow_async_stream.spec.load import deep_merge, parse_spec  # noqa: E402
from airflow_async_stream.spec.rules import violations_on  # noqa: E402
from airflow_async_stream.state.checkpoint import inspect_checkpoint  # noqa: E402
from airflow_async_stream.state.control import ControlArea  # noqa: E402
from airflow_async_stream.state.hold import Holder  # noqa: E402
from airflow_async_stream.switch.request import switch_in_place  # noqa: E402

VERSIONS = ("3.5.9", "4.0.5", "4.1.4", "4.2.0", "4.3.0")
SPARKS = Path(
    os.environ.get("ASYNC_STREAM_SPARKS")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "airflow-async-stream" / "sparks"
)
VERDICTS = REPO / "tests" / "integration" / "spark_scripts" / "restart_verdicts.py"
RESULTS = REPO / "bench" / "results" / "spark_matrix.json"
HOLDER = Holder.this_process("bench")
REAL_TIME = {
    "source": {"format": "kafka", "options": {"subscribe": "t", "kafka.bootstrap.servers": "127.0.0.1:9"}},
    "sink": {"format": "console", "output_mode": "update"},
    "trigger": {"real_time": "5 seconds"},
}


def home_of(version: str) -> Path:
    if version == metadata.version("pyspark"):
        import pyspark

        return Path(pyspark.__file__).parent
    home = SPARKS / version / "pyspark"
    if not (home / "bin" / "spark-submit").exists():
        raise SystemExit(f"Spark {version} is not installed: bash scripts/sparks.sh {version}")
    return home


def lifecycle(version: str, home: Path) -> dict[str, Any]:
    """Deploy (async on), switch in place, safe-disable in place, stop: each step's outcome and seconds."""
    launcher = LocalLauncher(
        base=[str(home / "bin" / "spark-submit"), "--master", "local[2]"], env={"SPARK_HOME": str(home)}
    )
    settings = DeploySettings(launcher=launcher, startup_timeout_s=180)
    checkpoint = str(TMP / f"ck-{version}")
    mapping = {
        "name": f"matrix-{version.replace('.', '-')}",
        "checkpoint": checkpoint,
        "source": {"format": "rate", "options": {"rowsPerSecond": 200}},
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "100 milliseconds"},
        "async_progress": {"enabled": True, "checkpoint_interval_ms": 3000},
    }
    control = ControlArea.for_checkpoint(checkpoint)
    cells: dict[str, Any] = {}

    def step(name: str, action: Any) -> bool:
        started = time.monotonic()
        try:
            said = action()
        except Exception as exc:  # noqa: BLE001 - the matrix records what broke, and goes on to the next line
            cells[name] = {"ok": False, "said": f"{type(exc).__name__}: {exc}"[:300]}
            return False
        cells[name] = {"ok": True, "said": said, "seconds": round(time.monotonic() - started, 1)}
        return True

    def deploy() -> str:
        deploy_job(parse_spec(mapping), HOLDER, settings)
        status = control.read_status()
        return f"running on Spark {status.spark_version}, async on"

    def switch() -> str:
        slower = parse_spec(deep_merge(mapping, {"trigger": {"processing_time": "200 milliseconds"}}))
        account = switch_in_place(control, slower, timeout_s=90)
        return f"{account.outcome}, pause {account.pause_s:.2f} s" if account.pause_s is not None else account.outcome

    def migrate() -> str:
        spec = parse_spec(deep_merge(mapping, {"trigger": {"processing_time": "200 milliseconds"}}))
        stages = run_safe_disable(SafeDisable(spec=spec, deploy=settings, wait_timeout_s=120), control.read_status())
        safe = inspect_checkpoint(checkpoint).sync_restart_safe
        return f"{' + '.join(s.how for s in stages)}; synchronous, checkpoint safe: {safe}"

    def stop() -> str:
        outcome = stop_job(control, HOLDER, settings, "the matrix is done")
        status = outcome.status
        if status is None or status.state != "stopped" or status.error:
            raise RuntimeError(f"ended {status.state if status else None}: {status.error if status else ''}")
        return "stopped"

    for name, action in (("deploy", deploy), ("switch", switch), ("migration", migrate), ("stop", stop)):
        if not step(name, action):
            try:
                stop_job(control, HOLDER, settings, "the matrix step failed")
            except Exception:  # noqa: BLE001 - best effort: no driver left behind
                pass
            break
    return cells


def inspector(version: str, home: Path) -> dict[str, Any]:
    """restart_verdicts.py under that Spark: does the inspector's verdict match Spark's own restart?"""
    env = {
        **os.environ,
        "SPARK_HOME": str(home),
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    command = [
        str(home / "bin" / "spark-submit"),
        "--master",
        "local[2]",
        str(VERDICTS),
        str(TMP / f"verdicts-{version}"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, env=env, check=False)
    if done.returncode != 0:
        return {"ok": False, "said": done.stderr[-300:]}
    seen = json.loads(done.stdout.strip().splitlines()[-1])
    gaps, cured, v2 = seen["gaps"], seen["cured"], seen.get("v2")
    agrees = not gaps["safe"] and gaps["error"] and cured["safe"] and not cured["error"] and cured["ran"]
    if v2 is not None:
        agrees = agrees and v2["safe"] and not v2["error"] and v2["ran"]
    formats = "commits v1" + (
        f", {'/'.join(v2['headers']['commits'])} (offsets {'/'.join(v2['headers']['offsets'])})" if v2 else ""
    )
    return {"ok": bool(agrees), "said": f"UNSAFE->fails, SAFE->resumes; {formats}", "raw": seen}


def real_time(version: str) -> str:
    """How a real-time spec is judged for that Spark (no Kafka here: the rules, not a run)."""
    base = {"name": "rt", "checkpoint": str(TMP / "rt"), **REAL_TIME}
    synchronous = violations_on(parse_spec(base), version, "the matrix")
    if synchronous:
        return "refused: " + synchronous[0][1]
    at_0 = {**base, "async_progress": {"enabled": True, "checkpoint_interval_ms": 0}}
    refused = violations_on(parse_spec(at_0), version, "the matrix")
    return "synchronous accepted; " + ("async at interval 0 refused" if refused else "async at interval 0 accepted")


def main(versions: list[str]) -> int:
    os.environ.setdefault("AIRFLOW_ASYNC_STREAM_SPARK_VERSION", "4.3.0")  # parse the 4.3 specs; each is judged again
    rows = {}
    for version in versions:
        home = home_of(version)
        print(f"Spark {version} ({home})", file=sys.stderr, flush=True)
        rows[version] = {
            "lifecycle": lifecycle(version, home),
            "inspector": inspector(version, home),
            "real_time": real_time(version),
        }
        print(json.dumps(rows[version], default=str)[:600], file=sys.stderr, flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps({"measured": time.strftime("%Y-%m-%d"), "rows": rows}, indent=1, default=str))
    print(
        "| Spark | deploy, async on | switch in place | safe-disable migration | stop | inspector agrees | real-time |"
    )
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for version, row in rows.items():
        cells = [row["lifecycle"].get(k) for k in ("deploy", "switch", "migration", "stop")]
        shown = [("yes: " if c["ok"] else "NO: ") + str(c["said"]) if c else "not reached" for c in cells]
        inspect = ("yes: " if row["inspector"]["ok"] else "NO: ") + row["inspector"]["said"]
        print(f"| {version} | " + " | ".join([*shown, inspect, row["real_time"]]) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or list(VERSIONS)))
