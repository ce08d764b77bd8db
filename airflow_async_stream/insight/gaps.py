"""The crash a synchronous restart meets on a checkpoint async mode left with gaps, and its cure.

``IllegalStateException: batch N-1 doesn't exist``: offsets/N-1 is missing under the newest offsets/N. The
cure needs no deletion (shared/seeds 001, SPARK_FACTS.md): an async query restarts over gaps, so a restart with
async on at interval 0 writes two contiguous batches, after which a synchronous restart works. Deleting the
newest offsets files, as Spark's log suggests, rewinds the query: the source is read again from the newest
contiguous pair (duplicates in the sink), and what the source no longer holds is lost.
"""

from __future__ import annotations

from typing import Any

from airflow_async_stream.insight.symptoms import Symptoms

__all__ = ["MIGRATION", "batch_missing"]

MIGRATION = (
    "the safe-disable migration: a DAG task group from `from airflow_async_stream.factories import "
    "safe_disable_async_progress` and `safe_disable_async_progress(\"<the job's spec file>\")` (the README's "
    'section "Turning async progress tracking off: the safe-disable migration" has a whole DAG), or a '
    "rollout whose desired folder holds the job's synchronous spec (it plans a safe-disable for it)"
)


def batch_missing(symptoms: Symptoms) -> dict[str, Any] | None:
    logged = symptoms.log_lines("batch_missing")
    if symptoms.inspection.offsets.missing_previous is None or symptoms.inspection.problems:
        return None
    if symptoms.live and symptoms.async_on and not logged:
        return None  # gaps are what async mode writes: nothing is wrong while it stays on
    inspection = symptoms.inspection
    n, m = inspection.latest_offset, inspection.latest_commit
    assert n is not None
    crashed = bool(logged) or "doesn't exist" in ((symptoms.status.error or "") if symptoms.status else "")
    evidence = [f"offsets/ holds {_ids(inspection.offsets.ids)}: offsets/{n - 1} is missing"]
    evidence += [f"driver log: {line}" for line in logged] + symptoms.status_lines()
    return {
        "diagnosis": "batch_missing",
        "summary": (
            f"a synchronous restart {'dies' if crashed else 'would die'} with IllegalStateException: batch {n - 1} "
            "doesn't exist: async progress tracking left gaps in offsets/, and "
            + (
                "the job was last run with it on (a restart with it on works)"
                if symptoms.async_on and not crashed
                else "it was turned off without the cure"
            )
        ),
        "cure": f"run {MIGRATION}. It restarts the job with async on at interval 0 (Spark restarts an async "
        "query over the gaps), waits for two committed batches, checks the checkpoint and restarts it "
        "synchronously. No checkpoint file is deleted",
        "evidence": evidence,
        "choices": _gap_choices(symptoms, n, m),
    }


def _gap_choices(symptoms: Symptoms, n: int, m: int | None) -> list[dict[str, Any]]:
    """The cure, keeping async on, and what Spark's log suggests (deleting offsets), with their costs."""
    ids = symptoms.inspection.offsets.ids
    pair = max((k for k in ids if k == 0 or (k - 1) in set(ids)), default=None)
    re_run = 0 if m == n else 1
    rewound = None if pair is None else n - pair
    rows = _rows_after(symptoms.events, pair) if pair is not None else None
    return [
        {
            "choice": "the safe-disable migration",
            "recommended": True,
            "re_run_batches": re_run,
            "costs": (
                f"batch {n} runs again (it was planned, not committed): its rows may reach the sink twice"
                if re_run
                else "nothing is re-run: the query resumes after batch " + str(n)
            )
            + "; the job runs with async on at interval 0 for two batches first",
        },
        {
            "choice": "keep async progress tracking on",
            "re_run_batches": re_run,
            "costs": "redeploy the job with async on: it starts over the gaps, and async's trade-off stays (a "
            "failure re-runs the batches after the newest offsets file)",
        },
        {
            "choice": "delete offsets files by hand (what Spark's log suggests)",
            "re_run_batches": rewound,
            "rows_read_again": rows,
            "costs": (
                f"rewinds the query to batch {pair}: offsets/ and commits/ above it must go, the source is "
                f"read again from there ({rewound} batches"
                + (f", {rows:,} rows" if rows else "")
                + ", duplicates in the sink), and what the source no longer holds (Kafka retention) is lost "
                "or fails the query on data loss; this tool never does it"
            )
            if pair is not None
            else "no two contiguous offsets files remain: the query would start over",
        },
    ]


def _rows_after(events: list[dict[str, Any]], batch: int) -> int | None:
    """Rows the newest run read in batches after ``batch`` (None when the progress log does not reach back)."""
    runs = [e for e in events if isinstance(e.get("batch_id"), int)]
    if not runs or min(e["batch_id"] for e in runs) > batch + 1:
        return None
    return sum(int(e.get("num_input_rows") or 0) for e in runs if e["batch_id"] > batch) or None


def _ids(ids: list[int]) -> str:
    return " ".join(map(str, ids[-8:])) + (f" ({len(ids)} files)" if len(ids) > 8 else "")
