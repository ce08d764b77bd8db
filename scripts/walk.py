"""The walk of one spec through ``deploy_job``, a supervisor's restart of it and the CLI's ``switch``: the
package's modules and folders entered, in order, with how often the walk moves between them and back into one
it had left.

    .venv/bin/python scripts/walk.py      # from a checkout's root; a fake driver stands in for Spark

The restart is followed until its wait for committed batches ends (a fake driver commits none: one second),
the switch until the driver is asked (a status that names its configuration, no driver answering: its
one-second wait ends it). Run it on two commits to compare a restructure's effect on the walks. The modules
and folders entered are fixed; the moves between them vary with how many polls a wait takes (121 to 132
module moves for one deploy on one commit), so each is also counted with every repeated stretch (a wait's
polls) kept once: compare those.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path.cwd()
PACKAGE = ROOT / "airflow_async_stream"
sys.path.insert(0, str(ROOT))

from airflow_async_stream.driver.deploy import DeploySettings, deploy_job, stop_job  # noqa: E402
from airflow_async_stream.spec.load import parse_spec  # noqa: E402
from airflow_async_stream.state.control import ControlArea  # noqa: E402
from airflow_async_stream.state.hold import Holder  # noqa: E402
from airflow_async_stream.supervise.act import SuperviseSettings, supervise_job  # noqa: E402
from tests.fake_driver import launcher as fake_launcher  # noqa: E402


def _module(filename: str) -> str | None:
    return os.path.relpath(filename, PACKAGE)[:-3] if filename.startswith(str(PACKAGE)) else None


def trace(call: Callable[[], Any]) -> list[str]:
    """The package modules ``call`` enters, in order (a module entered twice in a row counted once)."""
    seen: list[str] = []

    def profile(frame: FrameType, event: str, arg: Any) -> None:
        module = _module(frame.f_code.co_filename) if event == "call" else None
        if module and (not seen or seen[-1] != module):
            seen.append(module)

    sys.setprofile(profile)
    try:
        call()
    except Exception as exc:  # noqa: BLE001 - the switch's wait ends it: no driver answers
        print(f"   (ended: {type(exc).__name__}: {str(exc)[:100]})")
    finally:
        sys.setprofile(None)
    return seen


def folders(walk: list[str]) -> list[str]:
    """The walk's folders (``.`` for the package's root modules), a folder entered twice in a row counted once."""
    seen: list[str] = []
    for module in walk:
        folder = module.split("/")[0] if "/" in module else "."
        if not seen or seen[-1] != folder:
            seen.append(folder)
    return seen


def fold(steps: list[str], longest: int = 24) -> list[str]:
    """``steps`` with each run of a repeated stretch kept once (a wait's polls, however many, count as one)."""
    folded = list(steps)
    changed = True
    while changed:
        changed = False
        for length in range(1, longest + 1):
            i = 0
            while i + 2 * length <= len(folded):
                if folded[i : i + length] == folded[i + length : i + 2 * length]:
                    del folded[i + length : i + 2 * length]
                    changed = True
                else:
                    i += 1
    return folded


def report(name: str, walk: list[str]) -> None:
    for unit, steps in (("modules", walk), ("folders", folders(walk))):
        entered, once = list(dict.fromkeys(steps)), fold(steps)
        back = sum(1 for i, step in enumerate(once) if step in once[:i])
        print(
            f"{name}: {len(entered)} {unit} entered, {len(steps) - 1} moves between {unit}"
            f" ({len(once) - 1} with each repeat once, {back} of them back into one left)"
        )
        print("   " + " > ".join(entered if unit == "modules" else once))


def _write_status(control: ControlArea, **fields: Any) -> None:
    status = json.loads(Path(control.path(ControlArea.STATUS)).read_text())
    Path(control.path(ControlArea.STATUS)).write_text(json.dumps({**status, **fields}))


def main() -> None:
    checkpoint = str(Path(tempfile.mkdtemp()) / "ck")
    spec = parse_spec(
        {"name": "walk", "checkpoint": checkpoint, "source": {"format": "rate"}, "sink": {"format": "noop"}}
    )
    holder = Holder("process 1 on walk-host", "the walk")
    settings = DeploySettings(launcher=fake_launcher(), startup_timeout_s=60)
    report("deploy_job", trace(lambda: deploy_job(spec, holder, settings)))
    control = ControlArea.for_checkpoint(checkpoint)
    stop_job(control, holder, settings, "the walk is done")

    _write_status(control, state="failed", error="boom", finished_at=time.time() - 60, heartbeat_at=time.time() - 60)
    supervise = SuperviseSettings(deploy=settings, wait_timeout_s=1, confirm_batches=1)
    supervisor = Holder("process 2 on walk-host", "the walk's supervisor")
    report("supervisor (a crashed job restarted)", trace(lambda: supervise_job(control, supervisor, supervise)))
    stop_job(control, holder, settings, "the restart is walked")

    status = json.loads(Path(control.path(ControlArea.STATUS)).read_text())
    status.update(
        state="running",
        heartbeat_at=time.time() + 5,
        pid=os.getpid(),
        configuration={
            "async_progress": {"enabled": False, "checkpoint_interval_ms": 1000},
            "trigger": {"processing_time": "1 second"},
        },
    )
    Path(control.path(ControlArea.STATUS)).write_text(json.dumps(status))
    from airflow_async_stream.cli.commands import main as cli

    argv = ["switch", checkpoint, "--set", "trigger.processing_time=2 seconds", "--timeout", "1"]
    report("switch (the CLI, until the driver is asked)", trace(lambda: cli(argv)))


if __name__ == "__main__":
    main()
