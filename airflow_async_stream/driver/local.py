"""The driver runs on this host: spark-submit from an argument list, detached in its own session, its output
through the rotating log pump, and the process identity that lets this host, and only this host, signal it.
Also what a host needs for that: Java 17+, and a spark-submit."""

import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping
from importlib import metadata
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from airflow_async_stream.driver import process as driver_process
from airflow_async_stream.driver.bundle import refuse_driver_python, runtime_bundle
from airflow_async_stream.driver.launcher import EMBEDDED_MASTER, Submission
from airflow_async_stream.driver.log import start_pump
from airflow_async_stream.driver.process import Target, identify
from airflow_async_stream.driver.spark_version import SparkBuild, refuse_on, target_build
from airflow_async_stream.exceptions import DeployError, JavaNotFoundError, NotSignalledError
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.secret_options import SecretOptions
from airflow_async_stream.state import registry
from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.records import Driver

__all__ = ["LocalLauncher", "check_embedded_pyspark", "check_java", "spark_submit_binary"]

MIN_JAVA = 17
_JAVA_VERSION_RE = re.compile(r'version "(\d+)(?:\.(\d+))?')


def spark_submit_binary(binary: str = "spark-submit") -> str:
    """``binary`` from PATH, else the one shipped in the installed pyspark package (the embedded Spark)."""
    found = shutil.which(binary)
    if found:
        return found
    spec = find_spec("pyspark")
    if spec and spec.submodule_search_locations:
        bundled = Path(next(iter(spec.submodule_search_locations))) / "bin" / binary
        if bundled.exists():
            check_embedded_pyspark()
            return str(bundled)
    raise DeployError(
        f"{binary} was not found on PATH nor in an installed pyspark: put your Spark's bin/ on PATH (and set "
        'SPARK_HOME), name it in the Spark connection, or install the embedded Spark: pip install "airflow-async-stream[spark]"'
    )


def check_embedded_pyspark() -> None:
    """The embedded Spark's pyspark and the pyspark-client the apache-spark provider brings share one folder:
    of two versions, neither imports (``cannot import name ...``); say so before a driver finds out."""
    try:
        versions = {name: metadata.version(name) for name in ("pyspark", "pyspark-client")}
    except metadata.PackageNotFoundError:
        return
    if versions["pyspark"] != versions["pyspark-client"]:
        raise DeployError(
            f"the embedded Spark is broken: pyspark {versions['pyspark']} and pyspark-client "
            f"{versions['pyspark-client']} (the apache-spark provider's) install into the same pyspark folder; "
            f'install one version of both (pip install "airflow-async-stream[spark]" picks them), or run your '
            "own Spark: its bin/ on PATH and SPARK_HOME, or a Spark connection"
        )


def check_java() -> str:
    """Return the Java version string, or raise JavaNotFoundError with what to do about it."""
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    if not java or not Path(java).exists():
        raise JavaNotFoundError(
            f"Java {MIN_JAVA}+ is required to run Spark on this host, but no `java` was found "
            f"({'JAVA_HOME=' + java_home if java_home else 'not on PATH and JAVA_HOME is unset'}). "
            "Install a JDK 17 or newer (e.g. `apt-get install openjdk-17-jre-headless`)."
        )
    out = subprocess.run([java, "-version"], capture_output=True, text=True, check=False)
    match = _JAVA_VERSION_RE.search(out.stderr + out.stdout)
    if not match:
        raise JavaNotFoundError(f"could not read the version of {java}: {out.stderr.strip()[:200]}")
    major = int(match.group(1))
    if major == 1:  # "1.8.0" style
        major = int(match.group(2) or 0)
    if major < MIN_JAVA:
        raise JavaNotFoundError(f"Spark 4 needs Java {MIN_JAVA}+, but {java} is Java {major}")
    return next(line.strip() for line in (out.stderr + out.stdout).splitlines() if match.group(0) in line)


def _no_secrets(spec: JobSpec) -> SecretOptions:
    """A launcher built without Airflow reads no connection: a spec that names one is refused, naming it."""
    for side in ("source", "sink"):
        endpoint = getattr(spec, side)
        named = {"connection": endpoint.connection} if endpoint and endpoint.connection else {}
        named.update({f"secret_options.{k}": v for k, v in (endpoint.secret_options if endpoint else {}).items()})
        for field_name, conn_id in named.items():
            raise DeployError(
                f"{side}.{field_name}: names Airflow connection {conn_id!r}, which only a launcher built by "
                "Airflow reads (hooks/launchers.py); this one was built without Airflow"
            )
    return SecretOptions()


class LocalLauncher:
    """The driver runs on this host: spark-submit detached in its own session, output through the log pump.

    ``base`` is the start of the command (binary and the connection's arguments: master, deploy mode,
    keytab, ...); the submission's settings, name, application and arguments follow it.
    """

    def __init__(
        self,
        base: list[str] | None = None,
        master: str = EMBEDDED_MASTER,
        env: Mapping[str, str] | None = None,
        extra: Mapping[str, Any] | None = None,
        secrets: Callable[[JobSpec], SecretOptions] = _no_secrets,
    ) -> None:
        self.master = master
        self.base = base
        self.env = dict(env or {})
        self.extra = dict(extra or {})
        self._secrets = secrets
        self._spark: SparkBuild | None = None

    def check(self, spec: JobSpec) -> str:
        java = check_java()
        refuse_driver_python(*self.driver_python(spec))
        return f"Java on this host: {java}; {refuse_on(spec, self.spark()).describe()}"

    def driver_python(self, spec: JobSpec) -> tuple[str, str]:
        """The Python Spark runs the driver with, as Spark picks it, and the setting that named it."""
        env = {**os.environ, **self.env}
        for key in ("spark.pyspark.driver.python", "spark.pyspark.python"):
            if spec.spark_conf.get(key):
                return str(spec.spark_conf[key]), f"spark_conf.{key}"
        if env.get("PYSPARK_DRIVER_PYTHON"):  # else the launch sets it to this Python
            return env["PYSPARK_DRIVER_PYTHON"], "the environment's PYSPARK_DRIVER_PYTHON"
        return sys.executable, "this Python"

    def spark(self) -> SparkBuild:
        """The Spark of the command's spark-submit (asked once per binary), or the connection's word on it."""
        if self._spark is None:
            binary = self.base[0] if self.base else spark_submit_binary()
            self._spark = target_build(binary, self.env, self.extra)
        return self._spark

    def secrets(self, spec: JobSpec) -> SecretOptions:
        return self._secrets(spec)

    def command(self, submission: Submission) -> list[str]:
        """The exact spark-submit argument list (no shell ever sees it)."""
        conf = [arg for key, value in submission.conf.items() for arg in ("--conf", f"{key}={value}")]
        base = self.base if self.base is not None else [spark_submit_binary(), "--master", self.master]
        entry = str(runtime_bundle(submission.protocols).entry)  # it finds the bundle's site/ beside it
        remote_app = [submission.application] if submission.application and "://" in submission.application else []
        shipped = [*submission.py_files, *remote_app]  # spark-submit fetches a URL onto the driver's path
        py_files = ["--py-files", ",".join(shipped)] if shipped else []
        return [*base, *conf, *py_files, "--name", submission.name, entry, *submission.arguments]

    def log_path(self, submission: Submission, control: ControlArea) -> tuple[str, bool]:
        """Where spark-submit's output goes, and whether that is a file of this host only (a remote control area)."""
        if control.is_local:
            return control.path(ControlArea.DRIVER_LOG), False
        return registry.local_log_path(submission.job, submission.deployment_id), True

    def launch(self, submission: Submission, control: ControlArea) -> Driver:
        log_path, on_host = self.log_path(submission, control)
        exit_record = (control.url, submission.deployment_id)
        pid, pump_pid = self._start(self.command(submission), submission, log_path, exit_record)
        # Its pump records the exit in the control area (driver/exits.py).
        return identify(pid).but(log=log_path, log_on_host=on_host, log_pump_pid=pump_pid, exit_record=True)

    def _start(
        self, command: list[str], submission: Submission, log_path: str, exit_record: tuple[str, str] | None = None
    ) -> tuple[int, int]:
        """Start spark-submit in its own session, output through the pump; its and the pump's pids."""
        env = {**os.environ, **self.env, **submission.env}
        env.setdefault("PYSPARK_PYTHON", sys.executable)
        env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        pump, output = start_pump(log_path, *submission.log_limits, exit_record)
        try:
            process = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                env=env,
            )
        finally:
            os.close(output)
        # Reap both when they end, so a long-lived Airflow process never keeps a zombie that looks alive.
        for child in (process, pump):
            threading.Thread(target=child.wait, name=f"reap-{child.pid}", daemon=True).start()
        return process.pid, pump.pid

    def state(self, driver: Driver) -> str | None:
        return None  # no cluster manager: its spark-submit's exit is seen from its identity (ended)

    def ended(self, driver: Driver) -> str | None:
        return driver_process.launch_ended(driver)

    def kill(self, driver: Driver, target: Target) -> str:
        if not driver.on_a_host:
            raise NotSignalledError(
                f"its driver runs on a cluster ({driver.kind}): stop it through the Airflow Spark "
                "connection it was deployed with"
            )
        return driver_process.kill(driver, target)
