"""One spec followed through ``deploy_job`` with a call tracer: the modules the deployer hands work to, and how
often the walk enters the Airflow side. A fake driver (tests/fake_driver.py) stands in for Spark."""

from __future__ import annotations

import itertools
import os
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder
from tests.fake_driver import launcher as fake_launcher

ROOT = Path(__file__).resolve().parents[3]
PACKAGE = ROOT / "airflow_async_stream"
HOLDER = Holder("process 1 on walk-host", "the deploy walk")


def _module(filename: str) -> str | None:
    """A file of the package (``hooks/spark_stream.py``), ``<airflow>`` for Airflow's own code, else None."""
    if filename.startswith(str(PACKAGE)):
        return os.path.relpath(filename, PACKAGE)
    if (
        f"{os.sep}airflow{os.sep}" in filename
        and f"{os.sep}logging" not in filename
        and "log" not in Path(filename).name
    ):
        return "<airflow>"
    return None


def _airflow_side(module: str) -> bool:
    return module == "<airflow>" or module.startswith(("hooks/", "operators/", "sensors/", "triggers/"))


def test_a_deploy_hands_work_to_the_driver_and_state_folders_only_and_enters_the_airflow_side_once(
    tmp_path: Path,
) -> None:
    checkpoint = str(tmp_path / "ck")
    spec = parse_spec(
        {"name": "walk", "checkpoint": checkpoint, "source": {"format": "rate"}, "sink": {"format": "noop"}}
    )
    settings = DeploySettings(launcher=fake_launcher(), startup_timeout_s=60)
    seen: list[tuple[str | None, str | None]] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            caller = frame.f_back.f_code.co_filename if frame.f_back else ""
            seen.append((_module(caller), _module(frame.f_code.co_filename)))

    sys.setprofile(profile)
    try:
        record = deploy_job(spec, HOLDER, settings)
    finally:
        sys.setprofile(None)
        stop_job(ControlArea.for_checkpoint(checkpoint), HOLDER, settings, "the walk is done")

    assert record.state == "running" and record.driver.kind == "local-process"
    handed_to = {
        callee for caller, callee in seen if caller == "driver/deploy.py" and callee not in (None, "driver/deploy.py")
    }
    assert handed_to == {
        "driver/launcher.py",
        "driver/local.py",
        "driver/start.py",
        "driver/exits.py",  # the previous driver's exit, from any host (a first deploy stops nothing)
        "state/control.py",
        "state/records.py",
        "state/typed.py",  # a record's copy with changes (Record.but)
        "state/liveness.py",
        "state/hold.py",
        "state/checkpoint.py",
        "state/registry.py",
        "state/issued.py",  # the spec handed over, kept where no driver writes
    }
    walk = [callee for _, callee in seen if callee is not None]
    walk = [m for i, m in enumerate(walk) if i == 0 or walk[i - 1] != m]
    entries = [(a, b) for a, b in itertools.pairwise(walk) if _airflow_side(b) and not _airflow_side(a)]
    assert entries == [("driver/local.py", "hooks/connection_lookup.py")]  # the spec's secret options, once
