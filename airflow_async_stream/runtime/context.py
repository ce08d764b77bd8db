"""The governing context an application file runs in, so ``govern(writer)`` finds its spec."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from airflow_async_stream.runtime.governor import Governor
    from airflow_async_stream.spec.model import JobSpec
    from airflow_async_stream.spec.secret_options import SecretOptions

__all__ = ["current", "governed", "was_governed"]


@dataclass
class _Context:
    spec: JobSpec
    governor: Governor
    spark: Any
    secrets: SecretOptions
    used: bool = False


_current: _Context | None = None
_last: _Context | None = None


@contextlib.contextmanager
def governed(spec: JobSpec, governor: Governor, spark: Any, secrets: SecretOptions) -> Iterator[None]:
    global _current, _last
    _current = _last = _Context(spec, governor, spark, secrets)
    try:
        yield
    finally:
        _current = None


def current() -> _Context:
    if _current is None:
        raise RuntimeError(
            "govern() works inside the airflow-async-stream runtime: name this file as the job spec's "
            "`application` and deploy the spec, instead of running the file with spark-submit directly"
        )
    return _current


def was_governed() -> bool:
    return bool(_last and _last.used)
