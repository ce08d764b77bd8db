"""One job's tuning step: look (the spec its driver runs, its health, its recent batches, the tuner's record),
decide (decide.py), and act under the job's hold, fenced, so it never fights a person, a rollout, a migration or
the supervisor: a switch in place, or the safe-disable migration in place for turning async off. Every change
and every verdict that ends a trial is recorded (state/tuning.py); waiting is not.

The decision is made again from what is read under the hold: a second run for the same step finds it done.
"""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_async_stream.autotune.decide import decide
from airflow_async_stream.autotune.look import CHANGES, TunerAct, TunerStep, TunerView, configured, spec_key
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.exceptions import AsyncStreamError, JobHeldError, NotSwitchableError
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.insight.health import UP
from airflow_async_stream.insight.read import recent_events
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable, migration_hold_ttl_s
from airflow_async_stream.spec.load import deep_merge, parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, held
from airflow_async_stream.state.records import SUFFIX, Status
from airflow_async_stream.state.tuning import Trial, Tuning, read_tuning, write_tuning
from airflow_async_stream.switch.request import issued_running_spec, not_running, switch_in_place, why_not_in_place
from airflow_async_stream.waits import Log

__all__ = ["SETTLED", "TuneSettings", "Tuned", "look_at", "tune_job", "tune_until_settled"]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TuneSettings:
    """How the tuner changes a job: the deploy settings (its launcher, for a migration that cannot switch in
    place), how long a migration's waits may take, how many progress events one look reads at most."""

    deploy: DeploySettings = field(default_factory=DeploySettings)
    wait_timeout_s: float = 600.0
    events: int = 3000


@dataclass(frozen=True)
class Tuned:
    """What the tuner decided and did about one job in one step."""

    job: str
    control_url: str
    act: str
    reason: str
    to: dict[str, Any] | None = None
    saving: float | None = None
    #: Switches made (a migration makes two: interval 0, then synchronous).
    switches: int = 0
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    def line(self) -> str:
        return f"{self.job}: {self.act}: {self.reason}" + (f" ({self.error})" if self.error else "")


#: The acts after which a job's tuning has settled for now (no trial under way).
SETTLED = frozenset({TunerAct.NOTHING, TunerAct.KEEP, TunerAct.SKIP, TunerAct.ABORT, TunerAct.REVERT})


def look_at(control: ControlArea, settings: TuneSettings, at: float | None = None) -> TunerView | None:
    """What the tuner sees of the job now; None for a job never deployed."""
    try:
        spec = issued_running_spec(control)  # what the job delegates, as the Airflow side handed it over
    except NotSwitchableError:
        return None
    status = control.read_status()
    tuning = read_tuning(control)
    blocked = not_running(control, status)
    if blocked is None and status is not None and status.configuration is None:
        blocked = "its driver does not switch in place (an application's): the tuner changes only in place"
    if blocked is None:
        health = check_up(control, control.url.removesuffix(SUFFIX)).health
        if health.verdict not in UP:
            blocked = f"it is {health.verdict}: {health.reason}"
    wanted = max(settings.events, 3 * spec.autotune_settings.measure_batches + 50)
    events = recent_events(control, wanted)[-wanted:]
    deployment_id = status.deployment_id if status else ""
    configuration = (status.configuration if status else None) or {}
    run_id = status.query_run_id if status else None
    return TunerView(spec, deployment_id, configuration, events, tuning, at or time.time(), blocked, run_id)


def tune_job(control: ControlArea, holder: Holder, settings: TuneSettings, log: Log = _log) -> Tuned:
    """TunerView at one job and take its next tuning step (see the module docstring)."""
    look = look_at(control, settings)
    if look is None:
        return Tuned(control.url, control.url, str(TunerAct.SKIP), "never deployed")
    step = decide(look)
    if not _records(step, look):
        log.info("%s: %s: %s", look.spec.name, step.act, step.reason)
        return _tuned(control, look, step)
    ttl = migration_hold_ttl_s(settings.deploy, settings.wait_timeout_s, waits=2)
    try:
        with held(control, holder, ttl) as grant:
            look = look_at(control, settings) or look  # decided again from what is read under the hold
            step = decide(look)
            if not _records(step, look):
                return _tuned(control, look, step)
            log.info("%s: %s: %s", look.spec.name, step.act, step.reason)
            switches, error = _act(control, holder, settings, look, step, log) if step.act in CHANGES else (0, None)
            run_id = (control.read_status() or Status()).query_run_id  # the query the change started
            write_tuning(control, grant, _recorded(read_tuning(control), look, step, switches, error, run_id))
            return _tuned(control, look, step, switches, error)
    except JobHeldError as exc:
        log.info("%s: %s", look.spec.name, exc)
        return Tuned(look.spec.name, control.url, str(TunerAct.HELD), f"{exc}: looked at again when the hold ends")


def _records(step: TunerStep, look: TunerView) -> bool:
    """Whether the step changes the job or its record: a change, the end of a trial, a verdict said once."""
    if step.act in CHANGES or look.tuning.trial is not None and step.act != TunerAct.WAIT:
        return True
    last = look.tuning.last
    return step.act == TunerAct.NOTHING and (
        last is None or last.get("reason", "").split(":")[0] != step.reason.split(":")[0]
    )


def _tuned(
    control: ControlArea, look: TunerView, step: TunerStep, switches: int = 0, error: str | None = None
) -> Tuned:
    return Tuned(look.spec.name, control.url, str(step.act), step.reason, step.to, step.saving, switches, error)


def _target(spec: JobSpec, to: dict[str, Any]) -> JobSpec:
    return parse_spec(deep_merge(spec.to_mapping(), {"async_progress": to}))


def _act(
    control: ControlArea, holder: Holder, settings: TuneSettings, look: TunerView, step: TunerStep, log: Log
) -> tuple[int, str | None]:
    """Make the change in place: a switch to async options, or the migration to synchronous. The switches
    made, and the error that stopped it (the job then runs as the switch or the migration's rollback left it)."""
    target = _target(look.spec, step.to or {})
    turning_off = not target.async_progress.enabled
    why_not = why_not_in_place(control, target, require_sync_safe=turning_off)
    if why_not:
        return 0, f"not changed: the tuner changes only in place, and {why_not}"
    reason = f"autotune: {step.act}"
    try:
        if not turning_off:
            switch_in_place(
                control, target, holder=holder, reason=reason, log=log, timeout_s=settings.deploy.startup_timeout_s
            )
            return 1, None
        migration = SafeDisable(target, holder, settings.deploy, wait_timeout_s=settings.wait_timeout_s, log=log)
        try:
            return len(run_safe_disable(migration)), None
        except AsyncStreamError as exc:
            migration.roll_back(str(exc))
            raise
    except AsyncStreamError as exc:
        log.warning("%s: %s failed: %s", look.spec.name, step.act, exc)
        return 1, str(exc)[:400]


def _recorded(
    tuning: Tuning, look: TunerView, step: TunerStep, switches: int, error: str | None, run_id: str | None
) -> Tuning:
    """The record after the step: the trial begun, continued or ended; the decision appended."""
    decision = step.record(look) | {"switches": switches, "error": error}
    tuning = tuning.with_decision(decision)
    ongoing = tuning.trial
    if step.act not in CHANGES or error is not None or step.trial in ("revert", "back"):
        reverted = spec_key(look.spec) if step.act == TunerAct.REVERT and error is None else tuning.reverted_under
        started = tuning.last_trial_at if ongoing is not None or step.act not in CHANGES else look.now
        return tuning.but(trial=None, reverted_under=reverted, last_trial_at=started)
    after = time.time()
    base = (step.before.to_json() if step.before else None) or (ongoing.baseline if ongoing else None)
    configuration = configured(look, step.to)
    if step.act == TunerAct.SAMPLE:
        configuration = configured(look, {"enabled": False})
    if ongoing is None:
        trial = Trial(
            kind=step.trial or str(step.act),
            at=after,
            deployment_id=look.deployment_id,
            before=dict(look.configuration),
            configuration=configuration,
            baseline=base,
            reason=step.reason,
            changes=switches,
            query_run_id=run_id,
        )
        return tuning.but(trial=trial, last_trial_at=look.now)
    trial = ongoing.but(
        kind=step.trial or str(step.act),
        at=after,
        configuration=configuration,
        baseline=base,
        previous=step.after.to_json() if step.after else None,
        changes=ongoing.changes + switches,
        query_run_id=run_id,
    )
    return tuning.but(trial=trial)


def tune_until_settled(
    control: ControlArea,
    holder: Holder,
    settings: TuneSettings,
    timeout_s: float = 600.0,
    poll_s: float = 1.0,
    log: Log = _log,
) -> list[Tuned]:
    """TunerStep the job until its tuning settles or a change fails (a benchmark, a script, a test: the DAG steps
    once a run); every step taken. TimeoutError naming the last step when it does not settle in time."""
    deadline = time.monotonic() + timeout_s
    steps: list[Tuned] = []
    while True:
        steps.append(tune_job(control, holder, settings, log))
        if steps[-1].error is not None or steps[-1].act in SETTLED and read_tuning(control).trial is None:
            return steps
        if time.monotonic() > deadline:
            raise TimeoutError(f"{control.url}: tuning did not settle in {timeout_s:.0f} s: {steps[-1].line()}")
        time.sleep(poll_s)
