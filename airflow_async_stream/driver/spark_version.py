"""Which Spark a spark-submit submits to: its version and Scala version, from ``spark-submit --version``.

That costs a JVM start (about 2 s), so the answer is kept per binary, beside the job registry
(``spark-versions.json``), keyed by the binary, its SPARK_HOME and both their modification times: an upgrade in
place asks again. A connection's extra may name them instead (``spark_version``, ``scala_version``), for a
cluster whose Spark differs from the client's.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from airflow_async_stream.exceptions import DeployError, SettingsError, SpecError
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.rules import violations_on
from airflow_async_stream.spec.versions import line_of, parse_version
from airflow_async_stream.state.registry import registry_dir

__all__ = ["SparkBuild", "refuse_on", "spark_build", "target_build"]

_VERSION_RE = re.compile(r"\bversion (\d+\.\d+\.\d+\S*)")
_SCALA_RE = re.compile(r"Using Scala version (\d+\.\d+)")
_TIMEOUT_S = 120.0
_lock = threading.Lock()


@dataclass(frozen=True)
class SparkBuild:
    """A Spark version, its Scala binary version, and where that came from (a binary, or a setting)."""

    version: str
    scala: str
    source: str

    def describe(self) -> str:
        return f"Spark {self.version} (Scala {self.scala}; {self.source})"


def _cache_file() -> Path:
    return registry_dir().parent / "spark-versions.json"


def _key(binary: str, env: Mapping[str, str]) -> str:
    """The binary and its SPARK_HOME as they are now: paths and modification times (jars/ of the home too)."""
    real = os.path.realpath(binary)
    home = env.get("SPARK_HOME") or os.environ.get("SPARK_HOME") or str(Path(real).parent.parent)
    stamps = []
    for path in (real, os.path.join(home, "jars")):
        try:
            stamps.append(str(os.stat(path).st_mtime_ns))
        except OSError:
            stamps.append("-")
    return "|".join([real, os.path.realpath(home), *stamps])


def _read_cache() -> dict[str, Any]:
    try:
        data = json.loads(_cache_file().read_text())
    except (OSError, ValueError):
        return {}  # no cache yet, or a damaged one: asked again and rewritten
    return data if isinstance(data, dict) else {}


def _ask(binary: str, env: Mapping[str, str]) -> tuple[str, str]:
    """Run ``spark-submit --version`` (an argument list, no shell) and read its banner."""
    try:
        done = subprocess.run(
            [binary, "--version"],
            capture_output=True,
            text=True,
            timeout=_TIMEOUT_S,
            env={**os.environ, **env},
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise DeployError(f"could not ask {binary} for its Spark version: {exc}") from None
    said = done.stdout + done.stderr
    version, scala = _VERSION_RE.search(said), _SCALA_RE.search(said)
    if done.returncode != 0 or version is None or scala is None:
        tail = " ".join(said.strip().splitlines()[-3:])[:400]
        raise DeployError(f"`{binary} --version` named no Spark version (exit {done.returncode}): {tail}")
    return version[1], scala[1]


def spark_build(binary: str, env: Mapping[str, str] | None = None) -> SparkBuild:
    """The Spark ``binary`` submits to, asked once per binary and kept beside the registry."""
    env = dict(env or {})
    key = _key(binary, env)
    with _lock:
        cached = _read_cache().get(key)
        if isinstance(cached, dict) and {"version", "scala"} <= cached.keys():
            return SparkBuild(str(cached["version"]), str(cached["scala"]), f"{binary}, asked before")
        version, scala = _ask(binary, env)
        entries = {k: v for k, v in _read_cache().items() if not k.startswith(key.split("|", 1)[0] + "|")}
        entries[key] = {"version": version, "scala": scala}
        path = _cache_file()
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True))
        os.replace(tmp, path)
    return SparkBuild(version, scala, binary)


def target_build(binary: str, env: Mapping[str, str] | None, extra: Mapping[str, Any]) -> SparkBuild:
    """The Spark a launcher submits to: the connection's ``spark_version`` (and ``scala_version``) when its extra
    names one, else what its spark-submit says. A version no supported line has fails, naming where it came from."""
    if extra.get("spark_version"):
        where = "the Spark connection's extra spark_version"
        try:
            version = parse_version(str(extra["spark_version"]), where)
        except SettingsError as exc:
            raise DeployError(str(exc)) from None
        scala = str(extra.get("scala_version") or line_of(version).scala)
        return SparkBuild(version, scala, where)
    build = spark_build(binary, env)
    try:
        line_of(build.version, f"the Spark of {binary}")
    except SettingsError as exc:
        raise DeployError(str(exc)) from None
    if extra.get("scala_version"):
        return SparkBuild(build.version, str(extra["scala_version"]), build.source)
    return build


def refuse_on(spec: JobSpec, spark: SparkBuild) -> SparkBuild:
    """``spark`` when ``spec`` keeps the rules of that Spark; else SpecError naming each field and the Spark."""
    problems = violations_on(spec, spark.version, spark.source)
    if problems:
        raise SpecError(problems, f"{spec.name} for Spark {spark.version}")
    return spark
