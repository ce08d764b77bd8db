"""Errors raised by the provider: a small hierarchy rooted in the built-in exception that fits."""

from __future__ import annotations

__all__ = [
    "AsyncStreamError",
    "SpecError",
    "RuleViolationError",
    "JavaNotFoundError",
    "DeployError",
    "ConnectionLookupError",
    "JobAlreadyRunningError",
    "DriverFailedError",
    "DriverStartTimeoutError",
    "StopTimeoutError",
    "ControlAreaError",
    "UntrustedSpecError",
    "CheckpointReadError",
    "UnsafeSyncRestartError",
    "CommittedBatchesError",
    "CommittedBatchesTimeoutError",
    "SafeDisableRolledBackError",
    "JobHeldError",
    "HoldRevokedError",
    "DesiredStateError",
    "RolloutError",
    "SettingsError",
    "SwitchError",
    "NotSwitchableError",
    "SwitchRefusedError",
    "ChangeNotTakenError",
    "SwitchFailedError",
    "SwitchTimeoutError",
    "NotSignalledError",
    "cut_text",
]


class AsyncStreamError(Exception):
    """Root of every error this provider raises on purpose."""


def cut_text(text: str, most: int) -> str:
    """A message never echoes a long value whole (a 100 KB field name or value stays a line): at most ``most``
    characters, so cutting again changes nothing."""
    if len(text) <= most:
        return text
    tail = f"... ({len(text):,} chars)"
    return text[: max(0, most - len(tail))] + tail


class RuleViolationError(ValueError):
    """Cross-field rule failures, each with the field it concerns (carried through pydantic's error)."""

    def __init__(self, problems: list[tuple[str, str]]) -> None:
        self.problems = problems
        super().__init__("; ".join(f"{f}: {r}" for f, r in problems))


class SpecError(AsyncStreamError, ValueError):
    """A job spec breaks a rule; ``problems`` lists ``(field, reason)`` pairs."""

    def __init__(self, problems: list[tuple[str, str]], source: str | None = None) -> None:
        self.problems = [(cut_text(field, 120), cut_text(reason, 400)) for field, reason in problems]
        self.source = source
        where = f" in {source}" if source else ""
        lines = [f"{field}: {reason}" for field, reason in self.problems]
        super().__init__(f"invalid job spec{where}: " + "; ".join(lines))


class JavaNotFoundError(AsyncStreamError, RuntimeError):
    """No Java 17+ runtime, which local Spark needs, was found on this host."""


class DeployError(AsyncStreamError, RuntimeError):
    """A deploy could not be carried out."""


class ConnectionLookupError(DeployError):
    """An Airflow connection could not be read: it may exist, so nothing falls back to a default."""


class JobAlreadyRunningError(DeployError):
    """A live driver already runs on the job's checkpoint."""


class DriverFailedError(DeployError):
    """The Spark driver reported failure or exited before its query ran."""


class DriverStartTimeoutError(AsyncStreamError, TimeoutError):
    """The driver did not confirm a running query in time."""


class NotSignalledError(AsyncStreamError, RuntimeError):
    """A driver is not killed from here (another host, a cluster this launcher does not reach); says why."""


class StopTimeoutError(AsyncStreamError, TimeoutError):
    """A driver did not reach a final status in time after a stop request."""


class ControlAreaError(AsyncStreamError, RuntimeError):
    """A control-area file is unreadable or malformed."""


class UntrustedSpecError(ControlAreaError):
    """A control area names a spec the Airflow side never handed to a driver of that job: it is not run."""


class StorageError(AsyncStreamError, OSError):
    """A URL names storage this environment cannot reach: its client library is not installed."""


class CheckpointReadError(AsyncStreamError, OSError):
    """Spark's checkpoint could not be read (permissions, a file where a folder should be)."""


class UnsafeSyncRestartError(AsyncStreamError, RuntimeError):
    """The inspector says a synchronous restart of this checkpoint would fail or skip data."""


class CommittedBatchesError(AsyncStreamError, RuntimeError):
    """The job stopped or failed while a sensor waited for its committed batches."""


class CommittedBatchesTimeoutError(AsyncStreamError, TimeoutError):
    """Not enough batches were committed in time (often: the source produced no data)."""


class SafeDisableRolledBackError(AsyncStreamError, RuntimeError):
    """The synchronous redeploy failed; the job was put back on async progress tracking (interval 0)."""


class JobHeldError(AsyncStreamError, RuntimeError):
    """Another holder (a DAG run or a process) is changing this job right now."""


class HoldRevokedError(AsyncStreamError, RuntimeError):
    """A forced stop ended this holder's hold on a job: it may not change the job again."""


class DesiredStateError(AsyncStreamError, ValueError):
    """A desired-state folder is not usable as a whole; ``problems`` lists ``(file, field, reason)``."""

    def __init__(self, folder: str, problems: list[tuple[str, str, str]]) -> None:
        self.folder = folder
        self.problems = problems
        lines = [f"{file}: {field}: {reason}" for file, field, reason in problems]
        super().__init__(f"desired state {folder} is invalid:\n  " + "\n  ".join(lines))


class SettingsError(AsyncStreamError, RuntimeError):
    """The provider's ``[async_stream]`` settings cannot be read (never read as "nothing configured")."""


class RolloutError(AsyncStreamError, RuntimeError):
    """A rollout left one or more jobs short of their desired state (each job's outcome is in the message)."""


class SwitchError(AsyncStreamError, RuntimeError):
    """An in-place switch did not happen: the driver refused it, failed to start the new query, or died."""


class NotSwitchableError(SwitchError):
    """The job cannot be switched in place (not running, or a driver that does not switch): redeploy it."""


class SwitchRefusedError(NotSwitchableError):
    """The change needs a new driver, or Spark cannot restart it at all; ``problems`` lists ``(field, reason)``
    (no field for a reason about the whole query). Nothing was stopped."""

    def __init__(self, problems: list[tuple[str, str]], where: str) -> None:
        self.problems = problems
        lines = [
            f"{cut_text(field, 120)}: {cut_text(reason, 400)}" if field else cut_text(reason, 400)
            for field, reason in problems
        ]
        super().__init__(f"{where} cannot switch in place: " + "; ".join(lines))


class ChangeNotTakenError(AsyncStreamError, RuntimeError):
    """A change never took: the job's driver runs its previous configuration as before, so there is nothing
    to roll back (a rollout fails the job's item and leaves the job alone)."""


class SwitchFailedError(SwitchError, ChangeNotTakenError):
    """The driver could not start the new query and runs its previous configuration again."""


class SwitchTimeoutError(SwitchError, TimeoutError):
    """The driver did not settle the request in time."""
