"""What of a source this host reaches: paths (the format lookup asks Spark: tests/integration/test_analyze.py)."""

from __future__ import annotations

from pathlib import Path

from airflow_async_stream.runtime.reach import path_out_of_reach


def test_a_cluster_filesystem_is_out_of_reach_and_names_its_scheme() -> None:
    assert (
        path_out_of_reach("hdfs://nn:8020/in")
        == "its path hdfs://nn:8020/in is on a filesystem (hdfs) this host does not read"
    )
    assert "(s3a)" in (path_out_of_reach("s3a://bucket/in") or "")


def test_a_local_path_is_in_reach_only_where_it_exists(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.json").write_text("{}")
    assert path_out_of_reach(str(tmp_path / "in")) is None
    assert path_out_of_reach(f"file://{tmp_path / 'in'}") is None
    assert path_out_of_reach(str(tmp_path / "in" / "*.json")) is None
    assert (
        path_out_of_reach(str(tmp_path / "in" / "*.csv"))
        == f"its path {tmp_path / 'in' / '*.csv'} does not exist on this host"
    )
    assert (
        path_out_of_reach(str(tmp_path / "elsewhere"))
        == f"its path {tmp_path / 'elsewhere'} does not exist on this host"
    )
