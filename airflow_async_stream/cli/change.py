"""Changing a job from the command line: ``stop`` (graceful, or forced where a stop must win), ``release`` (a hold
whose holder is gone) and ``switch`` (in place, under the hold)."""

from __future__ import annotations

import argparse
import json
from functools import partial
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, fail, progress_log
from airflow_async_stream.cli.names import control_for
from airflow_async_stream.driver.deferred import DeferredLauncher
from airflow_async_stream.driver.exits import record_exit, unconfirmed
from airflow_async_stream.driver.launcher import Launcher
from airflow_async_stream.driver.process import this_host
from airflow_async_stream.driver.stop import stop_driver
from airflow_async_stream.exceptions import (
    ControlAreaError,
    JobHeldError,
    SpecError,
    SwitchError,
)
from airflow_async_stream.insight.checkup import check_up
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.hold import Holder, held, hold_state, revoke
from airflow_async_stream.state.liveness import liveness
from airflow_async_stream.state.records import State, hold_ttl_s
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome
from airflow_async_stream.state.stopped import BY_PERSON, by_this_user, record_stop
from airflow_async_stream.switch.change import Need, change_of

__all__ = ["cmd_release", "cmd_stop", "cmd_switch"]


def _connection_launcher(conn_id: str) -> Launcher:
    """The Airflow connection's launcher, for a driver on a cluster only (the CLI starts without Airflow)."""
    from airflow_async_stream.hooks.launchers import launcher_for

    return launcher_for(conn_id)


def _driver_gone(control: ControlArea, host: str) -> int:
    """On a person's word, record the exit of the newest driver, launched on ``host``, which is gone for good
    (and its driver with it): deploys from other hosts wait for that record, which no host can write now."""
    deployment = control.read_deployment()
    launched_on = deployment.driver.host if deployment and deployment.driver else None
    if deployment is None or launched_on != host:
        return fail(f"--driver-gone {host}: the newest driver of {control.url} was launched on {launched_on or 'no host'}, not {host}")  # fmt: skip
    status = control.read_status()
    judged = liveness(status)
    if judged.live and status is not None and status.deployment_id == deployment.deployment_id:
        return fail(f"--driver-gone {host}: its driver still reports ({judged.reason}), so {host} is not gone; "
                    "stop it instead", EXIT_BAD_STATE)  # fmt: skip
    if control.read_exit(deployment.deployment_id) is None:
        record_exit(control, deployment.deployment_id, f"said by hand on {this_host()}: host {host} is gone, its driver with it")  # fmt: skip
    print(f"recorded: the driver of deployment {deployment.deployment_id} on {host} has exited; a deploy from any host goes on")  # fmt: skip
    return EXIT_OK


def cmd_stop(args: argparse.Namespace) -> int:
    control = control_for(args.job)
    if args.driver_gone:
        return _driver_gone(control, args.driver_gone)
    check_up(control, None)  # a driver that died without a final status is recorded failed first, for every host
    holder = Holder.this_process("stop from the command line")
    if args.force:
        revoked = revoke(control, holder, "stop --force from the command line")
        if revoked:
            print(f"forced: ended the hold of {revoked.holder} ({revoked.purpose}); "
                  "its next step fails without changing the job")  # fmt: skip
    try:
        with held(control, holder, hold_ttl_s(stops=1, stop_kill_after_s=args.kill_after)) as grant:
            record_stop(control, grant, BY_PERSON, by_this_user(), "stop from the command line")
            outcome = stop_driver(
                control,
                "stop from the command line",
                graceful_timeout_s=args.graceful_timeout,
                kill_after_s=args.kill_after,
                launcher=DeferredLauncher(partial(_connection_launcher, args.conn_id)),
            )
    except JobHeldError as exc:
        return fail(f"not stopped: {exc}; add --force to stop it anyway (that holder's next step then fails "
                    "without changing the job)", EXIT_BAD_STATE)  # fmt: skip
    if outcome.was_live and outcome.status is None:
        print("stopped: the deployment that was launching ended before its driver reported")
        return EXIT_OK
    state = outcome.status.state if outcome.status else "never deployed"
    if outcome.exiting:  # its query ended, but its process has not been seen to exit
        print(f"stopping: state {state}, but {outcome.exiting.describe()}")
        return EXIT_BAD_STATE
    print(f"{'stopped' if outcome.was_live else 'was not running'}: state {state}")
    waiting = unconfirmed(control)
    if waiting is not None:  # a deploy from any host would wait for that host's exit record, then refuse
        print(f"but {waiting.describe()}: a deploy waits for it{waiting.remedy(args.job)}")
        return EXIT_BAD_STATE
    return EXIT_BAD_STATE if state == State.FAILED else EXIT_OK


def cmd_release(args: argparse.Namespace) -> int:
    control = control_for(args.job)
    try:
        hold = control.read_hold()
    except ControlAreaError as exc:
        if not args.force:
            return fail(f"{exc}; add --force to end this unreadable hold", EXIT_BAD_STATE)
        revoke(control, Holder.this_process("release --force from the command line"), "an unreadable hold")
        print("released an unreadable hold")
        return EXIT_OK
    if not hold:
        print("nobody holds this job")
        return EXIT_OK
    ended = hold_state(hold)
    if ended is None and not args.force:
        print(f"held by {hold.holder} ({hold.purpose}) until {hold.expires_at_text}; "
              "add --force if that holder is gone")  # fmt: skip
        return EXIT_BAD_STATE
    control.remove(ControlArea.HOLD)
    print(f"released the hold of {hold.holder} ({ended or 'forced'})")
    return EXIT_OK


#: What ``switch`` says of a change the running driver cannot make in place (switch/change.py decides).
_NOT_IN_PLACE = {
    Need.REFUSED: "refused: Spark cannot restart the changed query from this checkpoint: {why}",
    Need.NEW_DRIVER: "not in place: it needs a new driver ({why}); deploy the changed spec",
    Need.SAFE_DISABLE: "not in place without the gate: {why}; or run the safe-disable migration",
}


def cmd_switch(args: argparse.Namespace) -> int:
    from airflow_async_stream.switch.allowed import assign, parse_assignment
    from airflow_async_stream.switch.request import issued_running_spec, not_running, switch_in_place

    control = control_for(args.job)
    try:
        changes = [parse_assignment(text) for text in args.set]
    except ValueError as exc:
        return fail(str(exc))
    current = issued_running_spec(control)  # a change is made from what the Airflow side handed over
    mapping = current.to_mapping()
    for key, value in changes:
        try:
            mapping = assign(mapping, key, value)
        except ValueError as exc:
            return fail(str(exc))
    try:
        spec = parse_spec(mapping, source="the spec with --set applied")
        change = change_of(current.to_mapping(), spec.to_mapping(), args.require_sync_safe)
        stopped = not_running(control)
        if stopped is not None:  # no driver to ask, whatever the change
            return fail(f"not switched: {stopped}", EXIT_BAD_STATE)
        if change.need is Need.NOTHING:  # asking a driver would pause the stream for nothing
            print(f"nothing to switch: the job already runs with {_describe_spec(current)}; not asked, no pause")
            return EXIT_OK
        if change.need is not Need.SWITCH:  # the answer is no before anything is asked
            return fail(_NOT_IN_PLACE[change.need].format(why=change.why), EXIT_BAD_STATE)
        record = switch_in_place(
            control,
            spec,
            require_sync_safe=args.require_sync_safe,
            timeout_s=args.timeout,
            reason="CLI switch",
            log=progress_log(),
        )
    except SpecError as exc:  # bad input: nothing was asked of the driver
        return fail("\n".join(f"--set: {field}: {reason}" for field, reason in exc.problems))
    except SwitchError as exc:  # the answer is no: the job runs on as it was (the message says how)
        return fail(str(exc), EXIT_BAD_STATE)
    if args.json:
        print(json.dumps(record.to_json(), indent=2, sort_keys=True, default=str))
    else:
        _print_switch(record)
    return EXIT_OK if record.outcome == SwitchOutcome.SWITCHED else EXIT_BAD_STATE


def _describe_spec(spec: JobSpec) -> str:
    data = spec.to_mapping()
    return _describe_configuration({"async_progress": data.get("async_progress"), "trigger": data.get("trigger")})


def _describe_configuration(configuration: dict[str, Any] | None) -> str:
    configuration = configuration or {}
    settings = configuration.get("async_progress") or {}
    state = f"on, interval {settings.get('checkpoint_interval_ms')} ms" if settings.get("enabled") else "off"
    trigger = ", ".join(f"{k}={v}" for k, v in (configuration.get("trigger") or {}).items()) or "default"
    return f"async progress {state}; trigger {trigger}"


def _print_switch(record: SwitchAccount) -> None:
    headlines: dict[str, str] = {
        SwitchOutcome.SWITCHED: "switched in place",
        SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0: "NOT synchronous: the checkpoint is not safe for it yet; "
        "switched to async progress at interval 0 instead",
    }
    headline = headlines.get(record.outcome or "", record.outcome or "no outcome recorded yet")
    print(headline)
    rows = [
        ("request", record.request_id),
        ("before", _describe_configuration(record.before)),
        ("now", _describe_configuration(record.after)),
        ("last batch before", record.last_batch_before),
        ("first batch after", record.first_batch_after if record.first_batch_after is not None else "none yet"),
        (
            "pause",
            f"{record.pause_s:.2f} s (end of the last batch before to the start of the first after)"
            if record.pause_s is not None
            else "not measured (no batch before, or none after yet)",
        ),
    ]
    if record.gate:
        rows.append(("gate", record.gate))
    if record.outcome == SwitchOutcome.KEPT_ASYNC_AT_INTERVAL_0:
        rows.append(("next", "run the same switch again once two batches have committed at interval 0 "
                             "(`airflow-async-stream inspect` then says SAFE)"))  # fmt: skip
    for name, value in rows:
        print(f"  {name:<18} {value}")
