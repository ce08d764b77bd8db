"""Import the installed PySpark, not spark-submit's zipped copy of it, when both are the same files.

spark-submit puts ``$SPARK_HOME/python/lib/pyspark.zip`` and py4j's zip first on the driver's
``sys.path``. When SPARK_HOME is a pip-installed pyspark, those zips are copies of the packages installed
beside them, but a module imported from a zip is compiled from source at every start (a zip holds no
bytecode cache): about 0.8 s of each driver start here. A Spark distribution's own zips are kept.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["without_installed_copies"]

#: The packages spark-submit puts on the path as zips: ``pyspark.zip``, ``py4j-<version>-src.zip``.
_ZIPPED = ("pyspark", "py4j")


def _package_zipped(zip_path: Path) -> str | None:
    if zip_path.suffix != ".zip":
        return None
    return next((p for p in _ZIPPED if zip_path.stem == p or zip_path.stem.startswith(f"{p}-")), None)


def without_installed_copies(path: list[str]) -> list[str]:
    """``path`` without the zips of ``<dir>/pyspark/python/lib/`` whose package is installed in ``<dir>``,
    itself on ``path`` (pip's pyspark: the zip and the package ship in the same wheel)."""
    on_path = {os.path.realpath(entry) for entry in path if entry}
    kept = []
    for entry in path:
        zip_path = Path(entry)
        package = _package_zipped(zip_path)
        lib = zip_path.parent
        site = lib.parent.parent.parent  # <site>/pyspark/python/lib/<zip>
        if (
            package
            and (lib.name, lib.parent.name, lib.parent.parent.name) == ("lib", "python", "pyspark")
            and os.path.realpath(site) in on_path
            and (site / package / "__init__.py").is_file()
        ):
            continue
        kept.append(entry)
    return kept
