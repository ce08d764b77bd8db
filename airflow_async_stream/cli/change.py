"""Changing a job from the command line: ``release`` (a hold whose holder is gone) and ``switch`` (in place,
under the hold). ``stop`` is cli/stop.py."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import yaml

from airflow_async_stream.cli import EXIT_BAD_STATE, EXIT_OK, fail, progress_log
from airflow_async_stream.cli.names import control_for
from airflow_async_stream.decision.needs import Need, decide
from airflow_async_stream.decision.observe import observe
from airflow_async_stream.exceptions import (
    ControlAreaError,
    SpecError,
    SwitchError,
)
from airflow_async_stream.spec.bounds import check_bounds, yaml_problems
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import fence
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.fence import current_token, guard
from airflow_async_stream.state.hold import Holder, hold_state, revoke
from airflow_async_stream.state.requests import SwitchAccount, SwitchOutcome

__all__ = ["assign", "cmd_release", "cmd_switch", "parse_assignment"]


def cmd_release(args: argparse.Namespace) -> int:
    control = control_for(args.job)
    for name, read in ((ControlArea.FENCE, current_token), (ControlArea.HOLD, ControlArea.read_hold)):
        try:  # the fence first: ending a hold moves it on; a hold that is not JSON is ended below
            read(control)
        except (ControlAreaError, OSError) as exc:
            if isinstance(exc, ControlAreaError) and name == ControlArea.HOLD:
                break
            if not args.force:
                return fail(f"{name}: {exc}; add --force to set it aside", EXIT_BAD_STATE)
            _set_aside(control, name)
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
        print(
            f"held by {hold.holder} ({hold.purpose}) until {hold.expires_at_text}; add --force if that holder is gone"
        )
        return EXIT_BAD_STATE
    control.remove(ControlArea.HOLD)
    print(f"released the hold of {hold.holder} ({ended or 'forced'})")
    return EXIT_OK


def _set_aside(control: ControlArea, name: str) -> None:
    """An unreadable fence or hold, moved aside (never deleted); every hold granted before is ended."""
    with guard(control):
        aside = control.set_aside(name)
        fence.bump(
            control,
            f"{name} was unreadable: set aside as {aside} by release --force",
            seen=time.time_ns() // 10**6,
            revocation=True,
        )
    print(f"set aside an unreadable {name} as {aside}: every earlier hold is ended")


#: What ``switch`` says of a change the running driver cannot make in place (decision/needs.py decides).
_NOT_IN_PLACE = {
    Need.REFUSED: "refused: Spark cannot restart the changed query from this checkpoint: {why}",
    Need.NEW_DRIVER: "not in place: it needs a new driver ({why}); deploy the changed spec",
    Need.SAFE_DISABLE: "not in place without the gate: {why}; or run the safe-disable migration",
}


def cmd_switch(args: argparse.Namespace) -> int:
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
        observation = observe(control)
        stopped = not_running(control, observation.status)
        if stopped is not None:  # no driver to ask, whatever the change
            return fail(f"not switched: {stopped}", EXIT_BAD_STATE)
        decision = decide(observation, spec.to_mapping(), gated=args.require_sync_safe)
        if decision.need is Need.NOTHING:  # asking a driver would pause the stream for nothing
            print(f"nothing to switch: the job already runs with {_describe_spec(current)}; not asked, no pause")
            return EXIT_OK
        if decision.need is not Need.SWITCH:  # the answer is no before anything is asked
            return fail(_NOT_IN_PLACE[decision.need].format(why=decision.why), EXIT_BAD_STATE)
        record = switch_in_place(
            control,
            spec,
            require_sync_safe=args.require_sync_safe,
            decision=decision,
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
        rows.append(
            (
                "next",
                "run the same switch again once two batches have committed at interval 0 "
                "(`airflow-async-stream inspect` then says SAFE)",
            )
        )
    for name, value in rows:
        print(f"  {name:<18} {value}")


def parse_assignment(text: str) -> tuple[str, Any]:
    """``KEY=VALUE`` with KEY a dotted spec field and VALUE read as YAML (``true``, ``0``, ``'1 second'``)."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ValueError(f"--set {text!r}: give KEY=VALUE, KEY a dotted spec field such as async_progress.enabled")
    try:
        problems = yaml_problems(raw)  # as in a spec file: no alias, bounded nesting
        value = yaml.safe_load(raw) if raw.strip() and not problems else None
        problems = problems or ([] if value is None else check_bounds(value, key))
    except (yaml.YAMLError, ValueError) as exc:
        raise ValueError(f"--set {text[:200]!r}: the value is not valid YAML: {str(exc)[:200]}") from None
    if problems:
        raise ValueError(f"--set {key}: the value {problems[0][1]}")
    return key, value


def assign(mapping: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    """A copy of ``mapping`` with the dotted ``key`` set to ``value`` (``spark_conf`` keys keep their dots)."""
    parts = key.split(".")
    if parts[0] == "spark_conf" and len(parts) > 1:
        parts = ["spark_conf", ".".join(parts[1:])]
    result = dict(mapping)
    node = result
    for part in parts[:-1]:
        child = node.get(part)
        if child is not None and not isinstance(child, dict):
            raise ValueError(f"--set {key}: {part} is not a section of the spec")
        node[part] = dict(child or {})
        node = node[part]
    node[parts[-1]] = value
    return result
