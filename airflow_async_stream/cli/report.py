"""``report``: a job's latency per deployment and configuration, what a failure would re-run, and advice
(insight/), as text, JSON or a chart."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime
from typing import Any

from airflow_async_stream.cli import EXIT_OK, fail
from airflow_async_stream.cli.names import find_job
from airflow_async_stream.insight.advice import RerunLimits
from airflow_async_stream.insight.groups import describe
from airflow_async_stream.insight.read import job_report

__all__ = ["add_report", "cmd_report", "parse_duration"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*(s|secs?|seconds?|m|mins?|minutes?|h|hours?|d|days?)?\s*")


def parse_duration(text: str) -> float:
    """``30s``, ``15m``, ``2h``, ``7d``, ``90`` (seconds) or ``10 minutes``, in seconds."""
    match = _DURATION.fullmatch(text.lower())
    if match is None:
        raise ValueError(f"--since {text!r}: give a duration such as 90s, 15m, 2h or 7d")
    seconds = float(match[1]) * _UNITS[(match[2] or "s")[0]]
    if seconds <= 0:
        raise ValueError(f"--since {text!r}: the duration must be more than 0")
    return seconds


def _when(ts: float | None) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if ts else "-"


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.0f}"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def _print_groups(groups: list[dict[str, Any]]) -> None:
    width = max(len(describe(g["configuration"])) for g in groups)
    print("by deployment and configuration:")
    print(
        f"  {'deployment':<26} {'configuration':<{width}} {'batches':>7} {'rows/s':>8} {'p50':>6} {'p90':>6} {'p99':>6}"
        f" {'offset mgmt':>11} {'share':>6}"
    )
    for g in groups:
        managed = f"{_ms(g['offset_management_ms'])}{'*' if g['async'] else ''}"
        rate = "-" if g["rows_per_s"] is None else f"{g['rows_per_s']:,.0f}"
        print(
            f"  {g['deployment_id']:<26} {describe(g['configuration']):<{width}} {g['batches']:>7} {rate:>8} "
            f"{_ms(g['p50_ms']):>6} {_ms(g['p90_ms']):>6} {_ms(g['p99_ms']):>6} {managed:>11} "
            f"{_share(g['offset_management_share']):>6}"
        )
        notes = _group_notes(g)
        if notes:
            print(f"  {'':<26} {notes}")
    if any(g["async"] for g in groups):
        print("  * async: walCommit + commitOffsets time only the hand-off to a background thread, not a cost")


def _group_notes(group: dict[str, Any]) -> str:
    """What the group's row leaves out: startup batches (not in the percentiles) and batches run again."""
    notes = []
    if group["startup_batches"]:
        n, slowest = group["startup_batches"], group["startup_ms"]
        notes.append(
            f"{n} startup batch{'es' if n != 1 else ''} (a query start's first, up to {slowest:,.0f} ms) "
            "left out of p50/p90/p99"
        )
    if group["re_runs"]:
        notes.append(
            f"{group['re_runs']} batch{'es' if group['re_runs'] != 1 else ''} run again after a restart, counted once"
        )
    return "; ".join(notes)


def _print_report(data: dict[str, Any]) -> None:
    groups = data["groups"]
    print(f"job          {data['job'] or '-'} (checkpoint {data['checkpoint']})")
    if not groups:
        window = f" in the last {data['since_s']:.0f} s" if data["since_s"] else ""
        print(f"batches      none recorded{window}")
        return
    print(f"batches      {data['batches']}, {_when(groups[0]['started'])} to {_when(groups[-1]['ended'])}")
    if data["skipped_events"]:
        print(f"unreadable   {data['skipped_events']} progress lines left out (no timestamp or batch id)")
    print(
        f"latest       {describe(data['configuration'])}: p50 {_ms(data['p50_ms'])} ms, p90 {_ms(data['p90_ms'])} ms, "
        f"p99 {_ms(data['p99_ms'])} ms over {groups[-1]['batches']} batches"
    )
    baseline = data["baseline"]
    if baseline:
        print(
            f"offset mgmt  p50 {_ms(baseline['offset_management_ms'])} of {_ms(baseline['p50_ms'])} ms, share "
            f"{_share(baseline['share'])} (from {baseline['batches']} synchronous batches: "
            f"{describe(baseline['configuration'])})"
        )
    else:
        print("offset mgmt  not known: no synchronous batch in the log")
    if data["at_risk"]:
        risk = data["at_risk"]
        print(
            f"re-run now   {risk['batches']} batch{'es' if risk['batches'] != 1 else ''}, {risk['rows']:,} rows since batch {risk['durable_batch']} "
            "reached offsets/ (what a failure would re-run)"
        )
    if data["state"]:
        state = data["state"]
        print(
            f"state        commit p50 {_ms(state['commit_ms_per_task'])} ms per task, {_share(state['commit_share'])} "
            f"of the batch; {state['rows_in_state']} rows in state"
        )
    print()
    _print_groups(groups)
    if data["changes"]:
        print("changes:")
        for c in data["changes"]:
            print(
                f"  {_when(c['at'])}  batch {c['batch_id']}  {c['kind']}: {describe(c['from'])} -> {describe(c['to'])}"
            )
    _print_advice(data["advice"])
    _print_autotune(data.get("autotune"))


def _print_autotune(tuned: dict[str, Any] | None) -> None:
    """The tuner's configuration against the synchronous baseline, and its newest decisions."""
    if not tuned:
        return
    n, trial = tuned["switches"], tuned["trial"]
    print(
        f"autotune     {n} switch{'es' if n != 1 else ''} in all" + (f"; a trial under way: {trial}" if trial else "")
    )
    measured = tuned.get("measured") or {}
    before, after = measured.get("before"), measured.get("after")
    if before:
        print(
            f"  baseline   {describe(before['configuration'])}: p50 {_ms(before['p50_ms'])} ms over {before['batches']} batches"
        )
    if after:
        saving = f", saving {_share(measured.get('saving'))}" if measured.get("saving") is not None else ""
        print(
            f"  tuned      {describe(after['configuration'])}: p50 {_ms(after['p50_ms'])} ms over {after['batches']} batches{saving}"
        )
    for decision in tuned["decisions"]:
        print(f"  {_when(decision['at'])}  {decision['act']}: {decision['reason']}")


def _print_advice(advice: list[dict[str, Any]]) -> None:
    print("advice (never applied by itself):" if advice else "advice: none; the figures support no change")
    for number, item in enumerate(advice, 1):
        print(f"  {number}. {item['summary']}")
        for label in ("gives_up", "how"):
            if item.get(label):
                print(f"     {label.replace('_', ' ')}: {item[label]}")


def cmd_report(args: argparse.Namespace) -> int:
    try:
        since = parse_duration(args.since) if args.since is not None else None
    except ValueError as exc:
        return fail(f"--since: {exc}")
    named = find_job(args.job)
    limits = RerunLimits(max_rerun_rows=args.max_rerun_rows, max_rerun_s=args.max_rerun_seconds)
    report = job_report(named.control, named.checkpoint, since, limits)
    if args.png:
        from airflow_async_stream.insight.chart import draw

        draw(report, args.png)
    data = report.to_json()
    if args.json:
        print(json.dumps(data, indent=2, sort_keys=True))
    else:
        _print_report(data)
        if args.png:
            print(f"chart        {args.png}")
    return EXIT_OK


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be more than 0")
        return value

    return parse


def add_report(sub: Any, job_help: str) -> None:
    p = sub.add_parser("report", help="a job's latency, what a failure would re-run, and advice (read-only)")
    p.add_argument("job", metavar="JOB_OR_CHECKPOINT", help=job_help)
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.add_argument("--since", metavar="DURATION", help="only batches of the last DURATION (90s, 15m, 2h, 7d)")
    p.add_argument("--png", metavar="FILE", help="also draw batch latency over time to FILE (needs matplotlib)")
    p.add_argument(
        "--max-rerun-rows",
        type=_positive(int),
        metavar="N",
        help="advise a shorter interval if a failure could re-run more than N rows",
    )
    p.add_argument(
        "--max-rerun-seconds",
        type=_positive(float),
        metavar="S",
        help="advise a shorter interval if a failure could re-run more than S seconds of input",
    )
    p.set_defaults(func=cmd_report)
