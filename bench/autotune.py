"""The tuner against a hand sweep of the same query, on this machine.

The query: a source -> noop, 100 ms trigger, ``async_progress`` delegated to the tuner (``enabled: auto,
checkpoint_interval_ms: auto``), ``measure_batches`` 20, ``at_most_every`` 0; two sources (bench/switch.py's):
``rate`` 1000 rows/s, whose offsets are whole seconds (a batch a second), and ``rate_micro_batch`` (data at every
trigger, as a busy Kafka topic has: batches back to back).

- Autotune: a fresh synchronous deployment, stepped (autotune/tune.py) until it settles; the configuration it
  settled on, the switches it made, the time and batches it took, every window it measured.
- The sweep: a second fresh deployment, synchronous, then switched in place to async at 0, 1000, 3000 and
  10000 ms, and to the configuration the tuner settled on; each measured over ``SWEEP_BATCHES`` steady batches
  the same way the tuner measures (autotune/measure.py).

Targets: the settled configuration's p50 within 10 % of the sweep's best; at most 3 changes; no window the
tuner measured more than 10 % worse than its synchronous baseline.
"""

from __future__ import annotations

import tempfile
import time
from typing import Any

from airflow_async_stream.autotune.measure import Window, measure
from airflow_async_stream.autotune.tune import TuneSettings, tune_until_settled
from airflow_async_stream.decision.in_place import configuration_of
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.driver.local import LocalLauncher
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.tuning import read_tuning
from airflow_async_stream.switch.request import running_spec, switch_in_place
from bench.sides import BenchError
from bench.switch import SOURCES

SWEEP = (None, 0, 1000, 3000, 10000)  # None: synchronous
SWEEP_BATCHES = 40
MEASURE_BATCHES = 20
HOLDER = Holder.this_process("bench")
DEPLOY = DeploySettings(launcher=LocalLauncher(), startup_timeout_s=180)


def job_spec(checkpoint: str, source: str) -> dict[str, Any]:
    return {
        "name": "bench-autotune",
        "checkpoint": checkpoint,
        "source": SOURCES[source],
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "100 milliseconds"},
        "async_progress": {"enabled": "auto", "checkpoint_interval_ms": "auto"},
        "autotune": {"measure_batches": MEASURE_BATCHES, "at_most_every": "0 seconds"},
    }


def _deployed(source: str) -> ControlArea:
    checkpoint = tempfile.mkdtemp(prefix="bench-autotune-") + "/ck"
    deploy_job(parse_spec(job_spec(checkpoint, source)), HOLDER, DEPLOY)
    return ControlArea.for_checkpoint(checkpoint)


def tuned(source: str, log: Any) -> dict[str, Any]:
    """The tuner's run from a synchronous start to settled."""
    control = _deployed(source)
    started, first = time.monotonic(), control.read_status().last_batch_id or 0  # type: ignore[union-attr]
    steps = tune_until_settled(control, HOLDER, TuneSettings(deploy=DEPLOY), timeout_s=900, poll_s=1.0)
    took = time.monotonic() - started
    decisions = read_tuning(control).decisions
    settled = running_spec(control).async_progress.in_effect()
    batches = (control.read_status().last_batch_id or 0) - first  # type: ignore[union-attr]
    stop_driver(control, "measured", launcher=LocalLauncher())
    seen = {
        (d[side]["first_batch"], d[side]["last_batch"]): d[side]
        for d in decisions
        for side in ("before", "after")
        if d.get(side)
    }
    windows = list(seen.values())  # each window once (a decision's "after" is the next one's "before")
    baseline = next((w for w in windows if not w["configuration"]["async_progress"].get("enabled")), None)
    if baseline is None:
        raise BenchError(f"autotune: no synchronous baseline measured: {[s.line() for s in steps]}")
    worst = max(w["p50_ms"] for w in windows) / baseline["p50_ms"]
    for step in steps:
        if step.act != "wait":
            log(f"autotune {source}: {step.line()}")
    return {
        "settled": settled,
        "changes": sum(int(d.get("switches") or 0) for d in decisions),
        "decisions": [{"act": d["act"], "reason": d["reason"], "saving": d.get("saving")} for d in decisions],
        "seconds": round(took, 1),
        "batches": batches,
        "baseline_p50_ms": baseline["p50_ms"],
        "windows_p50_ms": [(_words(w["configuration"]), w["p50_ms"]) for w in windows],
        "worst_window_over_baseline": round(worst, 3),
    }


def _words(configuration: dict[str, Any]) -> str:
    progress = configuration.get("async_progress") or {}
    return f"async {progress['checkpoint_interval_ms']}" if progress.get("enabled") else "sync"


def _window(control: ControlArea, since: float, who: str) -> Window:
    deadline = time.monotonic() + 300
    status = control.read_status()
    assert status is not None and status.configuration is not None
    while True:
        found, seen = measure(
            control.read_progress(),
            deployment_id=status.deployment_id,
            wanted=status.configuration,
            batches=SWEEP_BATCHES,
            since=since,
        )
        if found is not None:
            return found
        if time.monotonic() > deadline:
            raise BenchError(f"sweep {who}: {seen} of {SWEEP_BATCHES} batches in 300 s")
        time.sleep(1.0)


def sweep(source: str, settled: dict[str, Any], log: Any) -> dict[str, float]:
    """Each configuration's p50 on one driver, switched in place from synchronous upwards."""
    control = _deployed(source)
    points = [(None if i is None else {"enabled": True, "checkpoint_interval_ms": i}) for i in SWEEP]
    if settled.get("enabled") and settled not in points:
        points.append(settled)
    found: dict[str, float] = {}
    try:
        for point in points:
            since = time.time()
            if point is not None:
                spec = running_spec(control)
                switch_in_place(control, parse_spec(deep_merge(spec.to_mapping(), {"async_progress": point})))
                since = time.time()
            who = _words(configuration_of(running_spec(control)))
            found[who] = _window(control, since, who).p50_ms
            log(f"autotune sweep {source}: {who}: p50 {found[who]:.0f} ms over {SWEEP_BATCHES} batches")
    finally:
        stop_driver(control, "measured", launcher=LocalLauncher())
    return found


def compared(source: str, log: Any) -> dict[str, Any]:
    """The tuner's run and the sweep of one query, and the targets."""
    auto = tuned(source, log)
    points = sweep(source, auto["settled"], log)
    best = min(points.values())
    mine = points[_words({"async_progress": auto["settled"]})]
    auto["settled_p50_ms"], auto["best_p50_ms"] = mine, best
    auto["settled_over_best"] = round(mine / best, 3)
    auto["met"] = (
        auto["settled_over_best"] <= 1.1 and auto["changes"] <= 3 and auto["worst_window_over_baseline"] <= 1.1
    )
    log(
        f"autotune {source}: settled on {_words({'async_progress': auto['settled']})} in {auto['changes']} changes, "
        f"{auto['seconds']} s, {auto['batches']} batches; p50 {mine:.0f} ms against the sweep's best {best:.0f} ms "
        f"({auto['settled_over_best']}x); worst window {auto['worst_window_over_baseline']}x the baseline"
    )
    return {"autotune": auto, "sweep_p50_ms": points}


def run(log: Any = print) -> dict[str, Any]:
    return {source: compared(source, log) for source in SOURCES}
