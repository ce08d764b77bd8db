"""A job stopped on purpose in a plan: its file's ``state: suspended`` stops it and keeps it stopped; a person's
stop holds until ``airflow-async-stream resume``, or until its file is written to say ``state: running``. A job
the supervisor declared crash looping is not redeployed as it was (only a changed spec, or ``resume``)."""

from __future__ import annotations

from typing import Any

from airflow_async_stream.rollout.desired import DesiredJob
from airflow_async_stream.rollout.item import PlanItem
from airflow_async_stream.rollout.observed import ObservedJob
from airflow_async_stream.state.stopped import BY_FILE, BY_PERSON

__all__ = ["on_purpose"]


def on_purpose(
    name: str, desired: DesiredJob, observed: ObservedJob, item: dict[str, Any], diff: dict[str, Any]
) -> PlanItem | None:
    """The item of a job its file suspends, that a person stopped, or that the supervisor gave up on (until its
    spec changes); None for any other job."""
    stopped = observed.stopped
    if desired.spec.suspended:
        if stopped is not None and stopped.kind == BY_FILE:
            return PlanItem(name, "unchanged", f"{stopped.describe()}: its file says state: suspended", **item)
        how = "a graceful stop" if observed.live else "recorded (no driver runs)"
        return PlanItem(
            name,
            "suspend",
            f"its file says state: suspended: {how}; its checkpoint and its place in the fleet are "
            "kept, and state: running starts it again",
            **item,
        )
    if stopped is None and observed.crash_looping_at is not None and not observed.live and not diff:
        return PlanItem(
            name,
            "unchanged",
            "crash_looping: the supervisor gave up restarting it; find the cause (`airflow-async-stream "
            f"doctor {name}`), then resume it (`airflow-async-stream resume {name}`) or change its spec",
            **item,
        )
    if stopped is None or stopped.kind != BY_PERSON:
        return None
    if desired.spec.state == "running" and (desired.modified_at or 0) > stopped.at:
        return None  # its file was written to say running after the stop: a rollout resumes it
    return PlanItem(
        name,
        "unchanged",
        f"{stopped.describe()}; resume with `airflow-async-stream resume {name}`, or write state: running in its file",
        **item,
    )
