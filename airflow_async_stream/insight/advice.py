"""Advice from a job's report, following the source documents' reasoning; never applied by itself.

Each piece names its figures, what it gives up, and what the user runs to act on it:

- ``turn_on`` (seeds 001, 004): a stateless job with a sink Spark allows, whose offset management is at least
  ``SHARE_WORTH`` of a synchronous batch; the p50 saving expected is that p50 offset management.
- ``turn_off`` (seed 001): async on, but the job is not eligible, or offset management was under
  ``SHARE_SMALL`` of a synchronous batch; the way off is the safe-disable migration.
- ``measure``: async on and no synchronous batch in the log: with async on, ``walCommit``/``commitOffsets`` time
  only a hand-off, so the saving cannot be judged from these batches.
- ``interval`` (seeds 001, 004; interval.py): durable offset writes cost more of each second than ``BACKLOG_LOAD`` (a backlog
  builds and gives the benefit back), or async batches are as slow as synchronous ones were; or, with a limit
  the user sets, the input a failure would re-run (up to the interval's worth) is over that limit.
- ``state_checkpointing`` (seed 003): a stateful query; the state store's commit time per task against the batch.
"""

from __future__ import annotations

from typing import Any

from airflow_async_stream.insight.documents import SOURCES
from airflow_async_stream.insight.groups import describe, is_async, percentile
from airflow_async_stream.insight.interval import DEFAULT_INTERVAL_MS, RerunLimits, backlog, rerun_cost, rerun_limit
from airflow_async_stream.insight.report import Report
from airflow_async_stream.spec.rules import ASYNC_SINKS

__all__ = ["RerunLimits", "advise"]


#: Offset management at least this share of a synchronous batch's p50: async progress tracking is worth it.
SHARE_WORTH = 0.25
#: Under this share, what async progress tracking saves is small.
SHARE_SMALL = 0.10
#: A state store commit at least this share of the batch makes state checkpointing worth trying (seed 003).
STATE_WORTH = 0.2


def _ineligible(spec: dict[str, Any] | None, report: Report) -> list[str]:
    """Why async progress tracking cannot run on this job (spec/rules.py's rules, and what the log shows)."""
    why = []
    sink = ((spec or {}).get("sink") or {}).get("format")
    if sink and str(sink).lower() not in ASYNC_SINKS:
        why.append(f"its sink {sink!r} does not support it (Spark allows {', '.join(sorted(ASYNC_SINKS))})")
    if (spec or {}).get("stateful") or report.state() is not None:
        why.append("it is stateful (async progress tracking works only on stateless queries)")
    trigger = ((report.latest.configuration if report.latest else None) or {}).get("trigger") or {}
    for kind in ("once", "available_now", "continuous", "real_time"):
        if trigger.get(kind):
            why.append(f"its trigger is {kind.replace('_', ' ')}")
    return why


def _turn_on(report: Report, managed: dict[str, Any], spec: dict[str, Any] | None) -> dict[str, Any] | None:
    share = managed["share"] or 0.0
    if share < SHARE_WORTH:
        return None
    why = _ineligible(spec, report)
    figures = {"share": share, "offset_management_ms": managed["offset_management_ms"], "p50_ms": managed["p50_ms"]}
    if why:
        return {
            "kind": "keep_off",
            "summary": f"offset management is {share:.0%} of a synchronous batch, but async progress tracking "
            f"cannot run here: {'; '.join(why)}",
            "figures": figures,
        }
    rows_per_s = report.latest.figures()["rows_per_s"] if report.latest else None
    turned_off = _turned_off(report)
    unknown = ""
    if not (spec or {}).get("sink"):  # no spec recorded, or an application that builds its own writer
        unknown = " (its sink is not known here: check the query is stateless and writes to Kafka)"
    before = ""
    if turned_off:
        before = (
            f"it was turned off at batch {turned_off['batch_id']} ({turned_off['kind']}): if that was for "
            "exactly-once delivery end to end, keep it off; else "
        )
    return {
        "kind": "turn_on",
        "summary": f"{before}turn async progress tracking on: offset management is {share:.0%} of a synchronous "
        f"batch (p50 {managed['offset_management_ms']:.0f} of {managed['p50_ms']:.0f} ms); expected p50 saving "
        f"about {managed['offset_management_ms']:.0f} ms{unknown}",
        "figures": figures
        | {"expected_saving_ms": managed["offset_management_ms"]}
        | ({"turned_off_at_batch": turned_off["batch_id"]} if turned_off else {}),
        "gives_up": "exactly-once end to end (a batch's offset range can change after a failure: "
        f"{SOURCES['databricks']}, Limitations); "
        f"a failure re-runs the input since the last durable checkpoint: {rerun_cost(rows_per_s, DEFAULT_INTERVAL_MS)}",
        "how": "set async_progress.enabled: true in the spec and roll it out, or run "
        f"`airflow-async-stream switch {report.named} --set async_progress.enabled=true`",
    }


def _turned_off(report: Report) -> dict[str, Any] | None:
    """The newest change in the batches read that turned async progress tracking off (a migration's last step,
    a switch or a deploy): someone chose synchronous, for a reason the advice cannot see."""
    changes: list[dict[str, Any]] = report.changes()
    return next((c for c in reversed(changes) if is_async(c["from"]) and is_async(c["to"]) is False), None)


def _turn_off(report: Report, managed: dict[str, Any] | None, spec: dict[str, Any] | None) -> dict[str, Any] | None:
    why = _ineligible(spec, report)
    figures: dict[str, Any] = {}
    if managed and not why and (managed["share"] or 0.0) < SHARE_SMALL:
        figures = {"share": managed["share"], "offset_management_ms": managed["offset_management_ms"]}
        why = [
            f"it saves little: offset management was {managed['share']:.0%} of a synchronous batch "
            f"(p50 {managed['offset_management_ms']:.0f} of {managed['p50_ms']:.0f} ms)"
        ]
    if not why:
        return None
    return {
        "kind": "turn_off",
        "summary": "turn async progress tracking off: " + "; ".join(why),
        "figures": figures,
        "gives_up": "the offset-management saving, if any",
        "how": f"in place: `airflow-async-stream switch {report.named} --set async_progress.enabled=false "
        "--require-sync-safe` (the running driver turns it off once a synchronous restart is safe, no new driver); "
        "or the safe-disable migration (safe_disable_async_progress, or a rollout of a spec with "
        'async_progress.enabled: false). A plain restart with it off can fail with "batch x doesn\'t exist" '
        f"({SOURCES['databricks']}, Turning off asynchronous progress tracking)",
    }


def _state(report: Report) -> dict[str, Any] | None:
    state = report.state()
    if state is None:
        return None
    worth = state["commit_share"] >= STATE_WORTH
    figures = state | {"latency_p50_ms": percentile([b.latency_ms for b in report.batches], 50)}
    verdict = "worth trying" if worth else "little to gain"
    return {
        "kind": "state_checkpointing",
        "summary": f"state checkpointing, not async progress tracking ({verdict}): the state store's commit takes "
        f"p50 {state['commit_ms_per_task']:.0f} ms per task, {state['commit_share']:.0%} of the batch",
        "figures": figures | {"worth": worth},
        "gives_up": f"a failure may re-run two batches instead of one ({SOURCES['state']})",
        "how": "in open-source Spark: the RocksDB state store with changelog checkpointing "
        "(spark_conf spark.sql.streaming.stateStore.providerClass="
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider and "
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled=true); on Databricks, "
        "asynchronous state checkpointing (spark.databricks.streaming.statefulOperator.asyncCheckpoint.enabled)",
    }


def advise(
    report: Report, spec: dict[str, Any] | None = None, limits: RerunLimits | None = None
) -> list[dict[str, Any]]:
    """Every piece of advice the report's figures support, most consequential first."""
    latest = report.latest
    if latest is None:
        return []
    managed = report.offset_management()
    found: list[dict[str, Any] | None] = [_state(report)]
    if latest.is_async is False and managed:
        found.append(_turn_on(report, managed, spec))
    if latest.is_async:
        found.append(_turn_off(report, managed, spec))
        if managed is None:
            found.append(
                {
                    "kind": "measure",
                    "summary": f"no synchronous batch in the log ({describe(latest.configuration)} throughout): "
                    "with async on, walCommit and commitOffsets time only a hand-off, so what it saves cannot be judged",
                    "figures": {},
                    "how": "the safe-disable migration ends with synchronous batches; report again after it",
                }
            )
        found += [backlog(report, managed), rerun_limit(report, limits or RerunLimits())]
    return [a for a in found if a is not None]
