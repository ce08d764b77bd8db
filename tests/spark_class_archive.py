"""Faster Spark driver starts for the tests: Java options, and a class-data-sharing archive of Spark.

The integration tests start about 90 short-lived Spark drivers, and a driver spends most of its start
loading Spark's classes. Java's application class-data sharing maps them from an archive written once by
a training run (``spark_scripts/class_archive_training.py``): measured here, spark-submit to the first
micro-batch about 45 % shorter. The archive is kept in the virtual environment, named by the Java and
Spark versions and the classpath, so a warm venv writes it once; a JVM that cannot use it (another
classpath, a damaged file) starts as it would without it. Tests only: users' drivers are not touched.

Class-data sharing refuses a classpath with a non-empty directory in it, and spark-submit puts
``$SPARK_CONF_DIR`` first on the driver's classpath: the tests' conf dir stays empty, and their Spark
settings travel as ``SPARK_SUBMIT_OPTS`` system properties, which a spec's ``spark_conf`` still overrides.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import subprocess
import sys
import time
import warnings
from importlib.util import find_spec
from pathlib import Path

#: No web UI; the JVM's quick C1 compiler only (a short-lived driver never profits from C2).
SUBMIT_OPTS = "-Dspark.ui.enabled=false -XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
#: Per virtual environment, so the archive's classpath (this empty conf dir, Spark's jars) never moves.
CACHE = Path(sys.prefix) / "spark-class-archive"
CONF_DIR = CACHE / "conf"
TRAINING = Path(__file__).resolve().parent / "integration" / "spark_scripts" / "class_archive_training.py"
_QUIET = "-Xlog:cds=off -Xlog:cds+dynamic=off"


def spark_home() -> Path:
    """The installed pyspark package, a Spark distribution (bin/, jars/), as the deploy hook finds it."""
    spec = find_spec("pyspark")
    assert spec and spec.submodule_search_locations, "pyspark is not installed"
    return Path(next(iter(spec.submodule_search_locations)))


def _archive_name() -> str:
    """Named by what the archive must match: the Java runtime, Spark's jars and the classpath."""
    java_home = os.environ.get("JAVA_HOME")  # the Java spark-submit runs, as bin/spark-class picks it
    runner = os.path.join(java_home, "bin", "java") if java_home else "java"
    java = subprocess.run([runner, "-version"], capture_output=True, text=True, check=True).stderr
    jars = sorted((p.name, p.stat().st_size) for p in (spark_home() / "jars").glob("*.jar"))
    key = repr((java, str(spark_home()), str(CONF_DIR), jars)).encode()
    return f"spark-{hashlib.sha256(key).hexdigest()[:16]}.jsa"


def _train(archive: Path) -> None:
    partial = archive.with_suffix(f".{os.getpid()}.partial")
    env = {
        **os.environ,
        "SPARK_CONF_DIR": str(CONF_DIR),
        "SPARK_SUBMIT_OPTS": f"{SUBMIT_OPTS} -XX:ArchiveClassesAtExit={partial} {_QUIET}",
        "PYSPARK_PYTHON": sys.executable,
        "PYSPARK_DRIVER_PYTHON": sys.executable,
    }
    done = subprocess.run(
        [str(spark_home() / "bin" / "spark-submit"), "--master", "local[2]", str(TRAINING)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    if done.returncode != 0 or not partial.exists():
        partial.unlink(missing_ok=True)
        raise RuntimeError(f"the training run failed (exit {done.returncode}):\n{done.stdout[-2000:]}")
    partial.rename(archive)  # atomic: a concurrent session sees the whole archive or none
    for old in CACHE.glob("spark-*.jsa"):
        if old != archive:
            old.unlink(missing_ok=True)  # one archive per venv (about 150 MB each)


def ensure_archive() -> Path | None:
    """The archive for this venv, written now if missing; None (and a warning saying why) if it cannot be."""
    CONF_DIR.mkdir(parents=True, exist_ok=True)
    try:
        archive = CACHE / _archive_name()
        with open(CACHE / ".lock", "w") as lock:  # the full tier's two workers: one trains, the other waits
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not archive.exists():
                start = time.monotonic()
                _train(archive)
                print(f"\nspark class archive: written in {time.monotonic() - start:.0f} s to {archive}")
        return archive
    except (OSError, RuntimeError, subprocess.SubprocessError) as exc:
        warnings.warn(f"spark class archive: none, drivers start without it ({exc})", stacklevel=2)
        return None


def submit_opts(archive: Path | None) -> str:
    """``SPARK_SUBMIT_OPTS`` for the tests' drivers, with the archive when there is one."""
    return f"{SUBMIT_OPTS} -XX:SharedArchiveFile={archive} {_QUIET}" if archive else SUBMIT_OPTS


if __name__ == "__main__":  # scripts/test.sh writes it beside the full tier's set-up steps
    sys.exit(0 if ensure_archive() else 1)
