"""What spark-submit runs for every job: put the runtime bundle first on the path, then run the driver.

Standard library only: it runs before anything of ours can be imported. The bundle (driver/bundle.py) is
``site/`` beside this file (a driver on the Airflow host) or the archive Spark extracted into the driver's
working folder (cluster mode, ``--archives runtime.zip#async-stream-runtime``). A driver Python the bundle
was not built for is told so here, before a SparkSession, with the setting that picks another.
"""

from __future__ import annotations

import json
import os
import runpy
import sys
import sysconfig

#: The name the archive is extracted under in a cluster driver's working folder.
ARCHIVE_ALIAS = "async-stream-runtime"
#: The bundle's own description, in its site folder (driver/bundle.py writes it).
MANIFEST = "bundle.json"
EXIT_BAD_RUNTIME = 2


def bundle_site(here: str, cwd: str) -> str | None:
    """The bundle's site folder: beside this file, else extracted into the working folder."""
    for candidate in (os.path.join(here, "site"), os.path.join(cwd, ARCHIVE_ALIAS)):
        if os.path.isfile(os.path.join(candidate, MANIFEST)):
            return candidate
    return None


def mismatch(manifest: dict[str, str]) -> str | None:
    """Why this Python cannot import the bundle (built for another version or platform), or None."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    ours = (sys.implementation.name, python, sysconfig.get_platform())
    wanted = (manifest.get("implementation"), manifest.get("python"), manifest.get("platform"))
    if ours == wanted:
        return None
    return (
        f"the runtime shipped with this job was built for {wanted[0]} {wanted[1]} on {wanted[2]}, but this driver's "
        f"Python ({sys.executable}) is {ours[0]} {ours[1]} on {ours[2]}: set spark.pyspark.driver.python and "
        f"spark.pyspark.python to a Python {wanted[1]} (its compiled parts fit only that version)"
    )


def main() -> int:
    here = os.path.dirname(os.path.abspath(__file__))
    site = bundle_site(here, os.getcwd())
    if site is None:
        print(
            f"airflow-async-stream: no runtime bundle beside {here} nor in ./{ARCHIVE_ALIAS}: the deploy ships it "
            f"(--archives ...#{ARCHIVE_ALIAS} in cluster mode); was the command changed?",
            file=sys.stderr,
        )
        return EXIT_BAD_RUNTIME
    with open(os.path.join(site, MANIFEST), encoding="utf-8") as file:
        why = mismatch(json.load(file))
    if why:
        print(f"airflow-async-stream: {why}", file=sys.stderr)
        return EXIT_BAD_RUNTIME
    sys.path.insert(0, site)
    runpy.run_module("airflow_async_stream.runtime.driver", run_name="__main__", alter_sys=True)  # it exits
    return 0


if __name__ == "__main__":
    sys.exit(main())
