"""The walk of one spec through ``deploy_job`` and through the CLI's ``switch``: the package's modules entered,
in order, with how often the walk moves between modules and back into one it had left.

    .venv/bin/python scripts/walk.py      # from a checkout's root; a fake driver stands in for Spark

The switch is followed until the driver is asked (a status that names its configuration, no driver answering:
its one-second wait ends it). Run it on two commits to compare a restructure's effect on both walks. The
modules entered are fixed; the moves between them vary with how many polls a wait takes (121 to 132 for
one deploy on one commit), so compare those over several runs.
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


def report(name: str, walk: list[str]) -> None:
    entered = list(dict.fromkeys(walk))
    back = sum(1 for i, module in enumerate(walk) if module in walk[:i])
    print(f"{name}: {len(entered)} modules entered, {len(walk) - 1} moves between modules, {back} back")
    print("   " + " > ".join(entered))


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
