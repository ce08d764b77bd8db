"""Bring a job that runs nothing (or is stalled) back: its last stable spec redeployed and committing batches,
or, where Spark could not restart the checkpoint as that spec says (a synchronous spec over async gaps), the
safe-disable path: never a synchronous start into ``batch N doesn't exist``. Shared by the supervisor and
``airflow-async-stream resume``."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, replace

from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.driver.deploy import DeploySettings, deploy_job
from airflow_async_stream.exceptions import ControlAreaError
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.commits import wait_for_commits
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.issued import issued
from airflow_async_stream.waits import Log

__all__ = ["REDEPLOY", "SAFE_DISABLE", "Recovery", "recover", "recovery_spec"]

_log = logging.getLogger(__name__)
REDEPLOY, SAFE_DISABLE = "redeploy", "safe_disable"


@dataclass(frozen=True)
class Recovery:
    deployment_id: str
    #: ``redeploy`` or ``safe_disable``, and why.
    how: str
    why: str


def recovery_spec(control: ControlArea, desired: Mapping[str, JobSpec] | None = None) -> tuple[JobSpec, str]:
    """The spec to bring the job back with, and which: its spec in ``desired`` (its desired folder's, by name,
    for this checkpoint); else its last stable spec, else the one last deployed, in either case the copy the
    Airflow side kept when it handed that spec over (UntrustedSpecError if none)."""
    deployment = control.read_deployment()
    wanted = (desired or {}).get((deployment.job if deployment else None) or "")
    if wanted and not wanted.suspended and ControlArea.for_checkpoint(wanted.checkpoint).url == control.url:
        return wanted, "its spec in the desired folder"
    stable = (control.read_json(ControlArea.STABLE) or {}).get("spec")
    if stable is not None:
        return issued(control, stable, f"{control.url}/{ControlArea.STABLE}"), "its last stable spec"
    deployed = control.read_json(ControlArea.SPEC)  # ControlAreaError when it is not a JSON object
    if deployed is None:
        raise ControlAreaError(f"{control.url}: never deployed, so there is no spec to bring it back with")
    return issued(control, deployed, f"{control.url}/{ControlArea.SPEC}"), "the spec last deployed (none ran stably)"


def recover(
    control: ControlArea,
    holder: Holder,
    settings: DeploySettings,
    wait_timeout_s: float = 300.0,
    confirm_batches: int = 2,
    log: Log = _log,
    desired: Mapping[str, JobSpec] | None = None,
) -> Recovery:
    """Redeploy the job (see the module docstring); returns once the new deployment committed
    ``confirm_batches`` batches. The caller holds the job (deploys renew the hold)."""
    spec, which = recovery_spec(control, desired)
    decision = decide(observe(control, spec.checkpoint), spec.to_mapping())
    if decision.need is Need.SAFE_DISABLE:
        why = f"{which} is synchronous and the job cannot restart synchronously now ({decision.why}): the safe-disable path"
        log.warning("%s: %s", spec.name, why)
        migration = SafeDisable(spec, holder, settings, wait_timeout_s=wait_timeout_s, log=log, in_place=False)
        switches = run_safe_disable(migration)
        return Recovery(switches[-1].deployment_id, SAFE_DISABLE, why)
    log.info("%s: redeploying %s", spec.name, which)
    record = deploy_job(spec, holder, replace(settings, redeploy=True), log=log, decision=decision)
    wait_for_commits(spec.checkpoint, record.start_batch, confirm_batches, wait_timeout_s, log)
    return Recovery(record.deployment_id, REDEPLOY, f"{which}, redeployed")
