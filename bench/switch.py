"""In-place switches beside their floor: plain PySpark switching the main job's query in one warm session, and
the provider's driver switching the same query on request (``switch_in_place``, what the ``switch`` command and the
migration call), the same cycles on each side.

The query: rate 1000 rows/s -> noop, 100 ms trigger, async progress at 3000 ms. A cycle: once the checkpoint
has a gap, to interval 0; after two committed batches, gated to synchronous; after one synchronous batch, back
to async at 3000 ms. Each switch's pause is the stream's idle time (insight/batches.py ``idle_between``): the
end of the old query's last micro-batch to the start of the new one's first, from Spark's progress events,
read the same way on both sides (a listener's file; the provider's progress log).
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.common import BENCH, percentile, run_json
from bench.sides import BenchError, read_progress_file, spark_settings

KINDS = ("to_interval_0", "to_synchronous", "to_async_3000")
SIDES = ("provider", "plain")
PARTS = ("to_stopped_s", "to_started_s", "to_first_batch_s")
#: The ratio the provider's pause may reach against plain PySpark's (p50), per kind.
TARGET_RATIO = 1.1
WAIT_S = 120


#: The main job's source, whose offsets are whole seconds since its creation: a micro-batch with data once a
#: second, so a switch's pause waits for the next second whatever the switch costs; and a source with data at
#: every trigger (as a busy Kafka topic has), where the pause is what the switch itself costs.
SOURCES = {
    "rate": {"format": "rate", "options": {"rowsPerSecond": "1000"}},
    "rate_micro_batch": {"format": "rate-micro-batch", "options": {"rowsPerBatch": "100"}},
}


def job_spec(checkpoint: str, interval_ms: int | None = 3000, source: str = "rate") -> dict[str, Any]:
    """The switched query over ``source``; ``interval_ms`` None: synchronous."""
    return {
        "name": "bench-switch",
        "checkpoint": checkpoint,
        "source": SOURCES[source],
        "sink": {"format": "noop"},
        "trigger": {"processing_time": "100 milliseconds"},
        "async_progress": {
            "enabled": interval_ms is not None,
            "checkpoint_interval_ms": 1000 if interval_ms is None else interval_ms,
        },
    }


def pauses(
    progress: list[dict[str, Any]], switches: list[dict[str, Any]], who: str
) -> dict[str, list[dict[str, float]]]:
    """Each switch by kind: its pause (the last batch that ran in ``before_run`` to the first in ``after_run``)
    and the pause's three parts: to the old query's stop (``stopped_at``), to the new one's start
    (``started_at``), to its first batch."""
    from airflow_async_stream.insight.batches import batch_window, idle_between, ran_a_batch

    runs: dict[str, list[dict[str, Any]]] = {}
    for event in progress:
        if ran_a_batch(event):
            runs.setdefault(str(event["query_run_id"]), []).append(event)
    out: dict[str, list[dict[str, float]]] = {kind: [] for kind in KINDS}
    for switch in switches:
        before, after = runs.get(switch["before_run"]), runs.get(switch["after_run"])
        if not before or not after:
            raise BenchError(f"{who}: no batch ran {'before' if not before else 'after'} a {switch['kind']} switch")
        last_end = max(batch_window(e)[1] for e in before)
        first = min(after, key=lambda e: batch_window(e)[0])
        out[switch["kind"]].append(
            {
                "pause_s": idle_between(max(before, key=lambda e: batch_window(e)[1]), first),
                "to_stopped_s": round(switch["stopped_at"] - last_end, 3),
                "to_started_s": round(switch["started_at"] - switch["stopped_at"], 3),
                "to_first_batch_s": round(batch_window(first)[0] - switch["started_at"], 3),
            }
        )
    return out


def plain_run(root: Path, cycles: int, source: str) -> dict[str, list[dict[str, float]]]:
    checkpoint = str(root / f"plain-{time.time_ns()}")
    progress = root / f"plain-{time.time_ns()}.jsonl"
    settings = json.dumps(spark_settings(job_spec(checkpoint, source=source)))
    script = str(BENCH / "plain" / "switch_in_session.py")
    result, _ = run_json([script, checkpoint, str(cycles), settings, str(progress), json.dumps(SOURCES[source])])
    if result.get("error"):
        raise BenchError(f"plain: {result['error']} (after {len(result['switches'])} switches)")
    return pauses(read_progress_file(progress), result["switches"], "plain")


def provider_run(root: Path, cycles: int, source: str) -> dict[str, list[dict[str, float]]]:
    """Deploy the job, then switch it on request, cycle after cycle; the pauses from its progress log."""
    from airflow_async_stream.driver.stop import stop_driver
    from airflow_async_stream.operators.deploy import DeployStreamingJobOperator
    from airflow_async_stream.spec.load import parse_spec
    from airflow_async_stream.state.checkpoint import batch_ids
    from airflow_async_stream.state.control import ControlArea
    from airflow_async_stream.switch.request import switch_in_place

    checkpoint = str(root / f"provider-{time.time_ns()}")
    record = DeployStreamingJobOperator(task_id="deploy", spec=job_spec(checkpoint, source=source)).execute({})
    control = ControlArea(record["control_area"])
    switches: list[dict[str, str]] = []
    run_id = str(control.read_status().query_run_id)  # type: ignore[union-attr]

    def wait_for(what: str, condition: Any) -> None:
        deadline = time.monotonic() + WAIT_S
        while not condition():
            if time.monotonic() > deadline:
                raise BenchError(f"provider: waited {WAIT_S} s for {what}")
            time.sleep(0.05)

    def has_gap() -> bool:
        offsets = batch_ids(checkpoint, "offsets")
        return len(offsets) >= 2 and offsets[-1] - 1 not in offsets

    try:
        for _ in range(cycles):
            wait_for("a gap in offsets/", has_gap)
            for kind, interval_ms in zip(KINDS, (0, None, 3000), strict=True):
                baseline = (batch_ids(checkpoint, "commits") or [-1])[-1]
                account = switch_in_place(
                    control,
                    parse_spec(job_spec(checkpoint, interval_ms, source)),
                    require_sync_safe=interval_ms is None,
                )
                if account.outcome != "switched" or not account.query_run_id:
                    raise BenchError(f"provider: the {kind} switch ended {account.outcome}: {account.reason}")
                switches.append(
                    {
                        "kind": kind,
                        "before_run": run_id,
                        "after_run": account.query_run_id,
                        "stopped_at": account.stopped_at,
                        "started_at": account.started_at,
                    }
                )
                run_id = account.query_run_id
                need = 2 if kind == "to_interval_0" else 1 if kind == "to_synchronous" else 0
                wait_for(
                    f"{need} committed batches",
                    lambda b=baseline, n=need: len([c for c in batch_ids(checkpoint, "commits") if c > b]) >= n,
                )
    finally:
        stop_driver(control, "benchmark done", graceful_timeout_s=30, kill_after_s=60)
    return pauses(control.read_progress(), switches, "provider")


def run(cycles: int, log: Any = print) -> dict[str, Any]:
    """Per source, both sides, alternating which goes first per round (two rounds of ``cycles`` cycles each)."""
    out: dict[str, Any] = {
        "settings": {
            "cycles_per_run": cycles,
            "rounds": 2,
            "target_ratio": TARGET_RATIO,
            "spark": spark_settings(job_spec("/checkpoint")),
        }
    }
    with tempfile.TemporaryDirectory(prefix="bench-switch-") as tmp:
        for source in SOURCES:
            samples: dict[str, dict[str, list[dict[str, float]]]] = {side: {k: [] for k in KINDS} for side in SIDES}
            for r, order in enumerate((SIDES, tuple(reversed(SIDES)))):
                for side in order:
                    t0 = time.monotonic()
                    found = (plain_run if side == "plain" else provider_run)(Path(tmp), cycles, source)
                    for kind, values in found.items():
                        samples[side][kind].extend(values)
                    p50s = ", ".join(
                        f"{k} {percentile([v['pause_s'] for v in vs], 50):.2f} s" for k, vs in found.items()
                    )
                    log(f"switch {source} round {r + 1}/2 {side:<8} pause p50: {p50s} ({time.monotonic() - t0:.0f} s)")
            out[source] = summarise(samples, job_spec("/checkpoint", source=source))
    return out


def summarise(samples: dict[str, dict[str, list[dict[str, float]]]], query: dict[str, Any]) -> dict[str, Any]:
    """Per side and kind: the pause's p50 and max, the p50 of each of its parts, every pause; and the
    provider/plain ratio of the pause p50s."""
    out: dict[str, Any] = {"query": query}
    for side, kinds in samples.items():
        out[side] = {}
        for kind, switches in kinds.items():
            pause = [s["pause_s"] for s in switches]
            out[side][kind] = {
                "pause_p50_s": percentile(pause, 50),
                "pause_max_s": max(pause),
                "n": len(pause),
                "parts_p50_s": {part: percentile([s[part] for s in switches], 50) for part in PARTS},
                "pauses_s": pause,
            }
    out["ratio_provider_over_plain_p50"] = {
        kind: round(out["provider"][kind]["pause_p50_s"] / out["plain"][kind]["pause_p50_s"], 3) for kind in KINDS
    }
    return out


def chart(results: dict[str, Any], path: Path) -> None:
    """Pause p50 (bars) and max (ticks) per kind, provider beside plain, one panel per source."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    titles = {"rate": "rate source (data once a second)", "rate_micro_batch": "rate-micro-batch (data every trigger)"}
    fig, axes = plt.subplots(1, len(SOURCES), figsize=(11, 4.2))
    for ax, source in zip(axes, SOURCES, strict=True):
        for i, side in enumerate(("plain", "provider")):
            xs = [x + (i - 0.5) * 0.38 for x in range(len(KINDS))]
            figures = [results[source][side][kind] for kind in KINDS]
            ax.bar(xs, [f["pause_p50_s"] for f in figures], 0.38, label=f"{side} p50")
            ax.scatter(
                xs,
                [f["pause_max_s"] for f in figures],
                marker="_",
                s=200,
                color="black",
                label="max" if i == 0 else None,
                zorder=3,
            )
        ratios = results[source]["ratio_provider_over_plain_p50"]
        ax.set_xticks(range(len(KINDS)), [f"{k.replace('_', ' ')}\n{ratios[k]:.2f}x" for k in KINDS])
        ax.set_ylabel("stream paused per switch, s")
        ax.set_ylim(0, 1.35 * max(results[source][side][k]["pause_max_s"] for side in SIDES for k in KINDS))
        ax.set_title(titles[source])
        ax.legend(loc="upper right", ncol=3)
    fig.suptitle("in-place switches: the provider's switch_in_place vs plain PySpark in one warm session")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
