"""A rollout's memory of a change that failed: the failed spec's fingerprint in the job's rollout record, so
the next plan holds that spec back until it changes (planner.remember_failure)."""

from __future__ import annotations

import hashlib
import json
from datetime import UTC, datetime
from typing import Any

__all__ = ["failed_before", "failure_words", "spec_digest"]


def spec_digest(spec: dict[str, Any] | None) -> str:
    """A short fingerprint of a spec mapping: a rollout records it for a change that failed."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, default=str).encode()).hexdigest()[:16]


def failed_before(desired_spec: dict[str, Any] | None, rollout: dict[str, Any] | None) -> dict[str, Any] | None:
    """The job's last rollout record when it says this very spec failed on the job."""
    record = rollout or {}
    if not record.get("failed_spec"):
        return None
    return record if record["failed_spec"] == spec_digest(desired_spec) else None


def failure_words(record: dict[str, Any]) -> str:
    """``failed at <run> <time>: <error>``."""
    at = record.get("finished_at")
    stamp = datetime.fromtimestamp(float(at), UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if at else "?"
    return f"failed at {record.get('run_id') or 'a rollout'} {stamp}: {record.get('error')}"
