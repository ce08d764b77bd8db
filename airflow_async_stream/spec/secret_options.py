"""Secret source/sink options: from Airflow connections to the driver, never through files or command lines.

A spec names connections, never secret values: ``connection`` (Kafka security settings) and
``secret_options`` (option name -> connection whose password is the value). The Airflow side resolves
them at deploy, masks them in Airflow's logs, and hands them to spark-submit in one environment variable
(readable only by the job's own user); the driver takes the variable out of its environment, applies the
options, and redacts their values from everything it writes. Nothing here imports Airflow or pyspark.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ENV_VAR",
    "ConnectionFields",
    "SecretOptions",
    "Redactor",
    "kafka_options",
    "looks_secret",
    "take_from_environment",
]

#: The environment variable that carries resolved options from the Airflow worker to the driver.
ENV_VAR = "AIRFLOW_ASYNC_STREAM_SECRET_OPTIONS"

#: Option or conf names whose values are secrets: they may not be written in a spec file.
SECRET_KEY_RE = re.compile(r"(?i)password|passwd|secret|token|jaas|credential|private[._-]?key|access[._-]?key")

_MIN_REDACTED_LEN = 3
_LOGIN_MODULES = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}
#: librdkafka spellings (used by Airflow's apache-kafka provider connections) -> the Java client's.
_RDKAFKA_ALIASES = {"sasl.mechanisms": "sasl.mechanism"}


#: The options of a connection's extra that are never secret: where the brokers are and how to talk to them.
PUBLIC_OPTIONS = frozenset({"kafka.bootstrap.servers", "kafka.security.protocol", "kafka.sasl.mechanism"})


def looks_secret(key: str) -> bool:
    return bool(SECRET_KEY_RE.search(key))


@dataclass(frozen=True)
class ConnectionFields:
    """The parts of an Airflow connection this module reads (kept plain so it needs no Airflow)."""

    conn_id: str
    host: str | None = None
    port: int | None = None
    login: str | None = None
    password: str | None = None
    extra: Mapping[str, Any] = field(default_factory=dict)


def kafka_options(conn: ConnectionFields) -> tuple[dict[str, str], set[str]]:
    """Spark Kafka options (``kafka.*``) from a connection, and the names of those that are secret.

    host[:port] -> bootstrap servers; login/password -> a SASL JAAS config for the connection's
    ``sasl.mechanism`` (PLAIN by default, SCRAM-SHA-256/512); every extra key -> ``kafka.<key>``. Every value
    of the extra is secret, whatever its key (``ssl.keystore.key`` names no "password"), but the few that only
    say where and how to connect (``PUBLIC_OPTIONS``: lineage names datasets by the servers), and so is the
    JAAS config.
    """
    extra = {str(k): v for k, v in dict(conn.extra).items()}
    login = extra.pop("sasl.username", None) or conn.login
    password = extra.pop("sasl.password", None) or conn.password
    options: dict[str, str] = {}
    for key, value in extra.items():
        key = key.removeprefix("kafka.")
        options[f"kafka.{_RDKAFKA_ALIASES.get(key, key)}"] = str(value)
    from_extra = set(options)
    if conn.host and "kafka.bootstrap.servers" not in options:
        single = "," not in conn.host and conn.port
        options["kafka.bootstrap.servers"] = f"{conn.host}:{conn.port}" if single else conn.host
    if login or password:
        if "kafka.sasl.jaas.config" in options:
            raise ValueError(f"connection {conn.conn_id!r}: give either login/password or sasl.jaas.config, not both")
        mechanism = options.setdefault("kafka.sasl.mechanism", "PLAIN").upper()
        module = _LOGIN_MODULES.get(mechanism)
        if module is None:
            raise ValueError(
                f"connection {conn.conn_id!r}: sasl.mechanism {mechanism} takes no login/password here; "
                "put its sasl.jaas.config in the connection's extra"
            )
        options.setdefault("kafka.security.protocol", "SASL_SSL")
        options["kafka.sasl.jaas.config"] = (
            f'{module} required username="{_jaas_quote(login or "")}" password="{_jaas_quote(password or "")}";'
        )
    return options, (from_extra - PUBLIC_OPTIONS) | {key for key in options if looks_secret(key)}


def _jaas_quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


@dataclass
class SecretOptions:
    """Resolved options per side (``source``/``sink``), and which values must never be shown."""

    options: dict[str, dict[str, str]] = field(default_factory=dict)
    secret_values: set[str] = field(default_factory=set)

    def add(self, side: str, key: str, value: str, secret: bool) -> None:
        self.options.setdefault(side, {})[key] = value
        if secret and value:
            self.secret_values.add(value)

    def names(self) -> list[str]:
        """``side.options.key`` for every resolved option (``spark_conf.key`` for a Spark setting): what status
        files may say about them."""
        return sorted(
            f"spark_conf.{key}" if side == "conf" else f"{side}.options.{key}"
            for side, opts in self.options.items()
            for key in opts
        )

    def to_env(self) -> dict[str, str]:
        if not self.options:
            return {}
        return {ENV_VAR: json.dumps({"options": self.options, "secret_values": sorted(self.secret_values)})}

    @classmethod
    def from_json(cls, raw: str) -> SecretOptions:
        data = json.loads(raw)
        return cls(
            options={side: {str(k): str(v) for k, v in opts.items()} for side, opts in data["options"].items()},
            secret_values=set(data["secret_values"]),
        )


def take_from_environment(environ: dict[str, str] | None = None) -> SecretOptions:
    """Remove the carried options from the environment (so nothing started later inherits them)."""
    env = os.environ if environ is None else environ
    raw = env.pop(ENV_VAR, None)
    return SecretOptions.from_json(raw) if raw else SecretOptions()


class Redactor:
    """Replaces secret values in text the driver writes (status, progress, its own error output)."""

    MASK = "***"

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values = sorted({v for v in values if len(v) >= _MIN_REDACTED_LEN}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, self.MASK)
            escaped = json.dumps(value)[1:-1]  # the same value inside a JSON string
            if escaped != value:
                text = text.replace(escaped, self.MASK)
        return text

    def json(self, value: Any) -> Any:
        """A JSON value with every secret inside its strings masked."""
        if not self._values:
            return value
        text = json.dumps(value)
        for secret in self._values:
            text = text.replace(json.dumps(secret)[1:-1], self.MASK)
        return json.loads(text)

    def __bool__(self) -> bool:
        return bool(self._values)
