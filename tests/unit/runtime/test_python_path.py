"""The driver imports pip's installed PySpark rather than spark-submit's zipped copy of the same files."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.runtime.python_path import without_installed_copies


def _installed(site: Path) -> tuple[str, str]:
    """A pip-style pyspark in ``site``: the packages, and spark-submit's zips inside pyspark/python/lib."""
    for package in ("pyspark", "py4j"):
        (site / package).mkdir(parents=True)
        (site / package / "__init__.py").write_text("")
    lib = site / "pyspark" / "python" / "lib"
    lib.mkdir(parents=True)
    zips = (lib / "pyspark.zip", lib / "py4j-0.10.9.9-src.zip")
    for zipped in zips:
        zipped.write_bytes(b"")
    return str(zips[0]), str(zips[1])


def test_zips_of_the_installed_package_give_way_to_it(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    pyspark_zip, py4j_zip = _installed(site)
    path = ["/app", pyspark_zip, py4j_zip, "/usr/lib/python3.11", str(site)]

    assert without_installed_copies(path) == ["/app", "/usr/lib/python3.11", str(site)]


def test_a_spark_distributions_zips_stay_first(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    _installed(site)
    dist_lib = tmp_path / "opt" / "spark" / "python" / "lib"
    dist_lib.mkdir(parents=True)
    path = [str(dist_lib / "pyspark.zip"), str(dist_lib / "py4j-0.10.9.9-src.zip"), str(site)]

    assert without_installed_copies(path) == path


def test_zips_stay_when_their_package_is_not_importable_from_the_path(tmp_path: Path) -> None:
    site = tmp_path / "site-packages"
    pyspark_zip, py4j_zip = _installed(site)

    assert without_installed_copies([pyspark_zip, py4j_zip]) == [pyspark_zip, py4j_zip]  # site not on the path
    (site / "py4j" / "__init__.py").unlink()  # py4j not installed there: its zip is the only copy
    assert without_installed_copies([pyspark_zip, py4j_zip, str(site)]) == [py4j_zip, str(site)]
