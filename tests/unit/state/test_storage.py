"""How every URL is opened: the client library a protocol needs is named with the extra that brings it, and
nothing makes a folder on an object store (a missing bucket would be created). The object-store APIs
themselves are in tests/integration/test_object_stores.py."""

from __future__ import annotations

import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from airflow_async_stream.state.control import ControlArea
from airflow_async_stream.state.storage import is_local_url

_WITHOUT = """
import sys
sys.modules[{module!r}] = None  # not installed
from airflow_async_stream.state.storage import open_url
from airflow_async_stream.exceptions import StorageError
try:
    open_url({url!r})
except StorageError as exc:
    print(exc)
"""


@pytest.mark.parametrize(
    ("module", "url", "extra"),
    [("s3fs", "s3a://bucket/ck.async-stream", "s3"), ("adlfs", "abfss://c@acct.dfs.core.windows.net/ck", "azure")],
)
def test_a_missing_client_library_is_named_with_its_extra(module: str, url: str, extra: str) -> None:
    said = subprocess.run(
        [sys.executable, "-c", _WITHOUT.format(module=module, url=url)], capture_output=True, text=True, check=True
    ).stdout
    assert (
        said.strip()
        == f'{url}: {url.split(":")[0]}:// storage needs its client library here: pip install "airflow-async-stream[{extra}]"'
    )


def test_only_local_paths_and_file_urls_are_local() -> None:
    assert is_local_url("/data/ck") and is_local_url("file:///data/ck")
    assert not is_local_url("s3a://b/ck") and not is_local_url("memory://ck")


def test_making_the_control_area_makes_a_folder_on_a_disk_and_nothing_on_an_object_store(tmp_path: Path) -> None:
    local = ControlArea(str(tmp_path / "ck.async-stream"))
    local.ensure()
    assert (tmp_path / "ck.async-stream").is_dir()
    remote = ControlArea(f"memory://ck-{uuid.uuid4().hex[:8]}.async-stream")
    remote.ensure()
    assert not remote.exists()  # a key makes its prefix; a folder made first would be a bucket there
    remote.write_json(ControlArea.STATUS, {"state": "running"})
    assert remote.exists()
