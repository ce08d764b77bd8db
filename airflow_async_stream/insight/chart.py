"""``report --png``: batch latency over time, its offset-management part below it, one colour per
configuration and a line at each switch or new deployment. Needs the ``chart`` extra (matplotlib)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from airflow_async_stream.exceptions import AsyncStreamError
from airflow_async_stream.insight.groups import configuration_key, describe, percentile

if TYPE_CHECKING:
    from airflow_async_stream.insight.report import Report

__all__ = ["draw"]


def _pyplot() -> Any:  # matplotlib is optional
    try:
        import matplotlib
    except ImportError:
        raise AsyncStreamError('report --png needs matplotlib: pip install "airflow-async-stream[chart]"') from None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def draw(report: Report, path: str) -> None:
    """Write the chart of ``report``'s batches to ``path`` (PNG); a report without batches draws a note."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(11, 5), dpi=110)
    colours = plt.get_cmap("tab10")
    seen: dict[str, int] = {}
    for group in report.groups:
        key = configuration_key(group.configuration)
        label = None if key in seen else describe(group.configuration)  # one legend entry per configuration
        index = seen.setdefault(key, len(seen))
        when = [datetime.fromtimestamp(b.start, UTC) for b in group.batches]
        ax.plot(when, [b.latency_ms for b in group.batches], ".-", lw=0.8, ms=3, color=colours(index % 10), label=label)
        ax.fill_between(
            when,
            [b.offset_management_ms for b in group.batches],
            step="mid",
            alpha=0.35,
            color=colours(index % 10),
            lw=0,
        )
    for change in report.changes():
        ax.axvline(
            datetime.fromtimestamp(change["at"], UTC), color="0.3", ls="--" if change["kind"] == "switch" else ":", lw=1
        )
    if not report.batches:
        ax.text(0.5, 0.5, "no batches recorded", ha="center", va="center", transform=ax.transAxes)
    ax.set_title(f"{report.job or report.checkpoint}: batch latency (line) and offset management (shaded)")
    ax.set_xlabel("batch start (UTC); dashed: switch in place, dotted: new deployment")
    ax.set_ylabel("triggerExecution, ms")
    latencies = [b.latency_ms for b in report.batches]
    top = 3 * (percentile(latencies, 90) or 0.0)  # a first batch's planning must not flatten the rest
    above = sum(1 for v in latencies if v > top)
    if above:
        ax.set_ylim(0, top)
        ax.text(
            0.01,
            0.97,
            f"{above} batch{'es' if above > 1 else ''} above {top:.0f} ms, off the chart (max {max(latencies):.0f} ms)",
            transform=ax.transAxes,
            va="top",
            fontsize=8,
        )
    else:
        ax.set_ylim(bottom=0)
    if report.groups:
        ax.legend(loc="upper right", fontsize=8)
    fig.autofmt_xdate()
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
