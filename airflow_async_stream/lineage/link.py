"""What links a driver's lineage to the Airflow task that deployed it, as the deploy hands it over.

- ``conf``: the ``spark.openlineage.*`` entries the OpenLineage Spark listener reads (the parent job, the
  transport), the same the apache-spark provider's ``openlineage_inject_*`` options add; on spark-submit's
  command line, so only the plain ones.
- ``secret_conf``: the transport's API key and headers: carried like secret options (secret_options.py), in
  the driver's environment, and set on its SparkSession, never on a command line or in a file.
- ``running``: the settings of the driver's own RUNNING events (lineage/running.py), in one environment variable
  the driver takes out of its environment at start.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from airflow_async_stream.spec.secret_options import looks_secret

__all__ = ["ENV_VAR", "LineageLink", "RunningSettings", "secret_values", "take_running_settings"]

#: The environment variable that carries ``RunningSettings`` from the Airflow worker to the driver.
ENV_VAR = "AIRFLOW_ASYNC_STREAM_LINEAGE"


def is_secret_conf(key: str) -> bool:
    """An OpenLineage transport's credential: its API key, a header (e.g. Authorization), or any secret name."""
    last = key.rsplit(".", 1)[-1]
    return last.lower() == "apikey" or ".headers." in key or looks_secret(key)


@dataclass(frozen=True)
class RunningSettings:
    """How a driver reports a running job: how often (the spec's ``lineage.running_every_minutes`` wins), in which
    namespace, under which parent (the deploy task), through which transport (None: the client's own config)."""

    every_minutes: float | None = None
    namespace: str = "default"
    parent: dict[str, str] | None = None
    transport: dict[str, Any] | None = field(default=None, repr=False)

    def to_env(self) -> dict[str, str]:
        return {ENV_VAR: json.dumps(asdict(self))}

    @classmethod
    def from_json(cls, raw: str) -> RunningSettings:
        data = json.loads(raw)
        return cls(**{k: data.get(k) for k in ("every_minutes", "namespace", "parent", "transport")})


@dataclass(frozen=True)
class LineageLink:
    conf: dict[str, str] = field(default_factory=dict)
    secret_conf: dict[str, str] = field(default_factory=dict, repr=False)
    running: RunningSettings | None = None

    @classmethod
    def split(cls, added: Mapping[str, Any], running: RunningSettings | None = None) -> LineageLink:
        """``added`` Spark conf entries, the credentials kept apart from the rest."""
        conf = {str(k): str(v) for k, v in added.items() if v is not None}
        return cls(
            conf={k: v for k, v in conf.items() if not is_secret_conf(k)},
            secret_conf={k: v for k, v in conf.items() if is_secret_conf(k)},
            running=running,
        )

    def env(self) -> dict[str, str]:
        return self.running.to_env() if self.running else {}


def secret_values(transport: Any) -> Iterator[str]:
    """The credentials inside a transport config (what the driver masks in everything it writes)."""
    if isinstance(transport, Mapping):
        for key, value in transport.items():
            if isinstance(value, str) and is_secret_conf(f"x.{key}"):
                yield value
            elif key == "headers" and isinstance(value, Mapping):
                yield from (str(v) for v in value.values())
            else:
                yield from secret_values(value)
    elif isinstance(transport, list):
        for item in transport:
            yield from secret_values(item)


def take_running_settings(environ: dict[str, str] | None = None) -> RunningSettings | None:
    """Remove the carried settings from the environment (so nothing started later inherits them)."""
    env = os.environ if environ is None else environ
    raw = env.pop(ENV_VAR, None)
    return RunningSettings.from_json(raw) if raw else None
