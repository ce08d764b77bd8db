"""Every actor takes the path the one decision gives, on the same jobs: the deploy guard, the planner, a
rollback, the migration run in one process, the supervisor's recovery, the CLI's switch and the tuner.

Each actor runs for real up to the point where it would start Spark (a deploy, the migration's first step,
a switch request): that point is replaced by a stand-in that records which way the actor went and stops it.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from airflow_async_stream.autotune import tune
from airflow_async_stream.autotune.look import TunerAct, TunerStep, TunerView
from airflow_async_stream.cli.commands import main as cli
from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.driver.deploy import DeploySettings
from airflow_async_stream.driver.start import refuse_unsafe_sync_start
from airflow_async_stream.exceptions import UnsafeSyncRestartError
from airflow_async_stream.migrations import safe_disable_steps
from airflow_async_stream.migrations.in_process import run_safe_disable
from airflow_async_stream.migrations.safe_disable_steps import SafeDisable
from airflow_async_stream.rollout import actions, apply
from airflow_async_stream.rollout.actions import ApplySettings, Before, Step
from airflow_async_stream.rollout.desired import DesiredJob
from airflow_async_stream.rollout.item import PlanItem
from airflow_async_stream.rollout.observed import read_job
from airflow_async_stream.rollout.planner import plan_job
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import issued
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from airflow_async_stream.state.tuning import Tuning
from airflow_async_stream.supervise import recover
from tests.helpers import deployed, make_checkpoint, rate_noop
from tests.unit.helpers import FRESH_FOR_S

ON = {"enabled": True, "checkpoint_interval_ms": 1000}
OFF = {"enabled": False}
MIGRATION, START = "the safe-disable migration", "a plain start"


@dataclass(frozen=True)
class Case:
    gaps: bool  # the checkpoint holds async mode's gaps (batches 0, 4, 7) or every batch (0..3, all committed)
    ran: dict[str, Any]  # the async options of the spec last deployed
    live: bool  # its driver runs (and can switch in place), or it crashed
    wanted: dict[str, Any]  # the async options wanted
    path: str  # what every actor does


CASES = {
    # The case the actors answered differently: a rollback left it async at interval 0, the supervisor migrated.
    "synchronous spec over gaps, nothing runs": Case(True, OFF, False, OFF, MIGRATION),
    "async turned off, nothing runs, every batch committed": Case(False, ON, False, OFF, START),
    "async turned off, nothing runs, gaps": Case(True, ON, False, OFF, MIGRATION),
    "async wanted over gaps, nothing runs": Case(True, ON, False, ON, START),
    "async turned off while an async driver runs": Case(True, ON, True, OFF, MIGRATION),
}


class Taken(Exception):  # noqa: N818 - not an error: the way an actor went, raised to stop it there
    pass


def taking(path: str) -> Any:
    def stand_in(*_args: Any, **_kwargs: Any) -> Any:
        raise Taken(path)

    return stand_in


def job(tmp_path: Path, case: Case) -> tuple[ControlArea, JobSpec]:
    root = tmp_path / "ck"
    make_checkpoint(root, [0, 4, 7] if case.gaps else [0, 1, 2, 3], [0, 4, 7] if case.gaps else [0, 1, 2, 3])
    control = ControlArea.for_checkpoint(str(root))
    ran = deployed(control, rate_noop("job", str(root), async_progress=case.ran))
    control.write_json("deployment.json", {"deployment_id": "d1", "job": "job", "start_batch": 0})
    control.write_json("stable.json", {"deployment_id": "d1", "spec": json.loads(control.read_bytes("spec.json"))})
    status: dict[str, Any] = {
        "deployment_id": "d1",
        "state": "running" if case.live else "failed",
        "batches": 3,
        "heartbeat_at": time.time(),
        "write_interval_s": FRESH_FOR_S / 3,
        "pid": os.getpid(),
        "host": socket.gethostname(),
    }
    if case.live:
        status["configuration"] = {"async_progress": ran.to_mapping()["async_progress"], "trigger": {}}
    control.write_json("status.json", status)
    return control, parse_spec(rate_noop("job", str(root), async_progress=case.wanted))


def guard(control: ControlArea, wanted: JobSpec) -> str:
    try:
        refuse_unsafe_sync_start(wanted, allow=False)
    except UnsafeSyncRestartError:
        return MIGRATION
    return START


def planner(control: ControlArea, wanted: JobSpec) -> str:
    item = plan_job("job", DesiredJob(wanted, "job.yaml"), read_job("job", control))
    return {"safe_disable": MIGRATION, "update": START}[item.action]


def rollback(control: ControlArea, wanted: JobSpec, monkeypatch: pytest.MonkeyPatch) -> str:
    issued.keep(wanted, "d0", "deploy")  # the spec to go back to: its last stable one, as the Airflow side kept it
    control.write_json("stable.json", {"deployment_id": "d0", "spec": wanted.to_mapping()})
    monkeypatch.setattr(actions.Step, "deploy_and_confirm", taking(START))
    monkeypatch.setattr(apply, "run_safe_disable", taking(MIGRATION))
    failed = parse_spec({**wanted.to_mapping(), "trigger": {"processing_time": "2 seconds"}}).to_mapping()
    item = PlanItem(
        "job", "update", "changed", checkpoint=wanted.checkpoint, control_url=control.url, desired_spec=failed
    )
    step = Step(item, control, ApplySettings("/fleet", DeploySettings()), Holder.this_process("test"), _quiet())
    return _taken(lambda: apply._roll_back(step, Before(control, "job"), "the update did not commit batches"))


def migration(control: ControlArea, wanted: JobSpec, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(SafeDisable, "to_interval_0", taking(MIGRATION))
    monkeypatch.setattr(SafeDisable, "to_synchronous", taking(START))
    return _taken(lambda: run_safe_disable(SafeDisable(wanted, Holder.this_process("test"), DeploySettings())))


def supervisor(control: ControlArea, wanted: JobSpec, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(recover, "deploy_job", taking(START))
    monkeypatch.setattr(recover, "run_safe_disable", taking(MIGRATION))
    holder = Holder.this_process("test")
    return _taken(lambda: recover.recover(control, holder, DeploySettings(), desired={"job": wanted}))


def cli_switch(control: ControlArea, wanted: JobSpec, capsys: pytest.CaptureFixture[str]) -> str:
    enabled = str(wanted.async_progress.enabled).lower()
    code = cli(["switch", wanted.checkpoint, "--set", f"async_progress.enabled={enabled}", "--timeout", "1"])
    said = capsys.readouterr()
    assert code == 1, said
    return MIGRATION if "not in place without the gate" in said.err else said.err


def tuner(control: ControlArea, wanted: JobSpec, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(tune, "run_safe_disable", taking(MIGRATION))
    monkeypatch.setattr(tune, "switch_in_place", taking(START))
    monkeypatch.setattr(safe_disable_steps.SafeDisable, "roll_back", taking("rolled back"))
    running = parse_spec(json.loads(control.read_bytes("spec.json")))
    look = TunerView(running, "d1", {}, [], Tuning(), time.time())
    step = TunerStep(TunerAct.REVERT, "revert: it saved too little", to=wanted.to_mapping()["async_progress"])
    return _taken(lambda: tune._act(control, Holder.this_process("test"), tune.TuneSettings(), look, step, _quiet()))


def _taken(act: Any) -> str:
    try:
        act()
    except Taken as taken:
        return str(taken)
    raise AssertionError("the actor went neither way")


def _quiet() -> Any:
    import logging

    return logging.getLogger("test")


@pytest.mark.parametrize("name", CASES)
def test_every_actor_takes_the_path_the_decision_gives(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    case = CASES[name]
    control, wanted = job(tmp_path, case)
    decision = decide(observe(control), wanted.to_mapping())
    assert (decision.need is Need.SAFE_DISABLE) == (case.path == MIGRATION), decision
    paths = {
        "deploy guard": guard(control, wanted),
        "planner": planner(control, wanted),
        "supervisor": supervisor(control, wanted, monkeypatch),
    }
    if not case.wanted["enabled"]:  # the migration and a rollback by it lead to a synchronous spec
        paths["migration"] = migration(control, wanted, monkeypatch)
    if case.live:  # the CLI and the tuner change a running job only
        paths["cli switch"] = cli_switch(control, wanted, capsys)
        paths["tuner"] = tuner(control, wanted, monkeypatch)
    paths["rollback"] = rollback(control, wanted, monkeypatch)
    assert paths == dict.fromkeys(paths, case.path)
