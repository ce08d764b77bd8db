"""The specs the Airflow side gave its drivers, kept where no driver writes: the only specs run again.

A control area sits on storage that running jobs write (a driver runs the user's code), so what it says a job
ran (``spec.json``, ``stable.json``) decides nothing alone. Each deploy and each switch in place keeps the spec
it hands over here, by its digest, beside the job registry (``$AIRFLOW_ASYNC_STREAM_HOME/specs/<job>/``). The
supervisor, ``resume``, a rollback, a switch and the tuner take a spec from a control area only when its digest
is kept here, and then run this copy; anything else is refused, naming how it differs from the last spec kept.
Hosts that act on one another's jobs share ``AIRFLOW_ASYNC_STREAM_HOME`` (docs/reliability.md).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

from airflow_async_stream.exceptions import AsyncStreamError, UntrustedSpecError
from airflow_async_stream.spec.load import parse_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.state import ledger
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.incidents import Incident, Kind, record_incident
from airflow_async_stream.state.records import SUFFIX
from airflow_async_stream.state.registry import registry_dir

__all__ = ["KEPT", "digest", "issued", "keep", "kept_folder"]

#: Specs kept per job (the newest by when they were last handed over); a job switched daily keeps 50 days.
KEPT = 50
#: Fields named in a refusal at most.
_NAMED = 8


def digest(spec: JobSpec) -> str:
    """The spec's identity: the SHA-256 of ``spec.json`` as a deploy writes it."""
    return hashlib.sha256(spec.to_json_bytes()).hexdigest()


def kept_folder(job: str) -> Path:
    return registry_dir().parent / "specs" / job


def keep(spec: JobSpec, deployment_id: str, how: str) -> str:
    """Keep ``spec`` as handed to ``deployment_id``'s driver (``how``: deploy or switch); returns its digest. A
    deploy is the job's newest deployment in its ledger from here on."""
    folder = kept_folder(spec.name)
    folder.mkdir(parents=True, exist_ok=True)
    key = digest(spec)
    path = folder / f"{key}.json"
    entry = {"digest": key, "deployment_id": deployment_id, "how": how, "at": time.time(), "spec": spec.to_mapping()}
    tmp = folder / f".{key}.{uuid.uuid4().hex}.tmp"
    tmp.write_text(json.dumps(entry, indent=2))
    os.replace(tmp, path)  # a second keep of one spec only moves it to the newest
    for old in _newest_first(folder)[KEPT:]:
        old.unlink(missing_ok=True)
    if how == "deploy":
        ledger.write(
            ControlArea.for_checkpoint(spec.checkpoint),
            ledger.DEPLOYED,
            {"deployment_id": deployment_id, "at": entry["at"]},
        )
    return key


def issued(control: ControlArea, data: Any, where: str) -> JobSpec:
    """The spec ``data`` (read from ``where`` in ``control``) as the Airflow side kept it, or UntrustedSpecError
    (recorded as the job's incident): it names another job's checkpoint, or no deploy or switch of its job
    handed it to a driver."""
    spec = parse_spec(data, where)
    if ControlArea.for_checkpoint(spec.checkpoint).url != control.url:
        _refuse(
            control,
            f"{where} names checkpoint {spec.checkpoint!r}, which is not this job's "
            f"({control.url.removesuffix(SUFFIX)})",
        )
    path = kept_folder(spec.name) / f"{digest(spec)}.json"
    if not path.is_file():
        _refuse(control, f"{where}: {_unknown(spec)}")
    try:
        entry = json.loads(path.read_text())
    except ValueError as exc:
        raise UntrustedSpecError(f"{path} is not JSON ({exc}): the spec it keeps cannot be trusted") from None
    return parse_spec(entry.get("spec"), str(path))


def _refuse(control: ControlArea, why: str) -> NoReturn:
    with contextlib.suppress(OSError, AsyncStreamError):  # a control area that takes no incident: still refused
        _record(control, why)
    raise UntrustedSpecError(f"{why}; refused: no spec runs from a control area alone (deploy the job again)")


def _record(control: ControlArea, why: str) -> None:
    record_incident(
        control,
        Incident(
            kind=Kind.UNTRUSTED_SPEC,
            deployment_id=_deployment_id(control),
            error=why,
            diagnosis="the control area names a spec the Airflow side never handed to this job's drivers: something "
            "that writes its storage wrote it",
            cure=f"find out who writes {control.url}; deploy the job again from its own spec or desired folder",
            action="refused: nothing was run from it",
        ),
    )


def _deployment_id(control: ControlArea) -> str | None:
    try:
        status = control.read_status()
    except AsyncStreamError:
        return None
    return status.deployment_id if status else None


def _unknown(spec: JobSpec) -> str:
    newest = next(iter(_newest_first(kept_folder(spec.name))), None)
    if newest is None:
        return (
            f"this host never deployed or switched job {spec.name!r} (nothing kept in {kept_folder(spec.name)}; "
            "hosts that act on one another's jobs share AIRFLOW_ASYNC_STREAM_HOME)"
        )
    last = json.loads(newest.read_text())
    fields = _differences(last.get("spec") or {}, spec.to_mapping())
    named = ", ".join(fields[:_NAMED]) + (f" and {len(fields) - _NAMED} more" if len(fields) > _NAMED else "")
    return (
        f"not a spec this host deployed or switched job {spec.name!r} to: it differs from the last one "
        f"(deployment {last.get('deployment_id')}) in {named}"
    )


def _differences(kept: dict[str, Any], seen: dict[str, Any], prefix: str = "") -> list[str]:
    """The dotted fields whose values differ."""
    fields = []
    for key in sorted(set(kept) | set(seen), key=str):
        a, b, name = kept.get(key), seen.get(key), f"{prefix}{key}"
        if isinstance(a, dict) and isinstance(b, dict):
            fields += _differences(a, b, f"{name}.")
        elif a != b:
            fields.append(name)
    return fields


def _newest_first(folder: Path) -> list[Path]:
    try:
        found = [p for p in folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
    except FileNotFoundError:
        return []
    return sorted(found, key=lambda p: p.stat().st_mtime_ns, reverse=True)
