"""The driver log's pump: rotation at the caps, nothing blocks, the last lines survive, failures are said."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from airflow_async_stream.driver.log import RotatingLog, rotated_names, start_pump, tail_lines


def _sizes(path: Path, files: int) -> dict[str, int]:
    return {Path(n).name: os.path.getsize(n) for n in rotated_names(str(path), files) if os.path.exists(n)}


def test_rotates_before_a_line_would_pass_the_cap_and_keeps_only_the_newest_files(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    log = RotatingLog(str(path), max_bytes=100, files=3)
    for n in range(40):
        log.write(f"line {n:03d} ".encode() + b"x" * 10 + b"\n")  # 20 bytes: five lines per file
    log.close()
    sizes = _sizes(path, 5)
    assert set(sizes) == {"driver.log", "driver.log.1", "driver.log.2"}
    assert all(size <= 100 for size in sizes.values())
    assert path.read_text().splitlines()[-1].startswith("line 039")
    assert (tmp_path / "driver.log.2").read_text().splitlines()[0].startswith("line 025")  # older ones dropped


def test_a_single_file_starts_again_and_a_line_longer_than_the_cap_is_cut(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    log = RotatingLog(str(path), max_bytes=50, files=1)
    log.write(b"a" * 30 + b"\n")
    log.write(b"b" * 200 + b"\n")
    log.close()
    assert path.read_bytes() == b"b" * 50
    assert not (tmp_path / "driver.log.1").exists()


def test_an_existing_log_is_continued_up_to_the_cap(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    path.write_bytes(b"x" * 90 + b"\n")  # an earlier deployment's output
    log = RotatingLog(str(path), max_bytes=100, files=2)
    log.write(b"next deployment\n")
    log.close()
    assert (tmp_path / "driver.log.1").read_bytes() == b"x" * 90 + b"\n"
    assert path.read_bytes() == b"next deployment\n"


def test_output_that_cannot_be_written_is_dropped_and_said_once_writing_works_again(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = RotatingLog(str(folder / "driver.log"), max_bytes=1000, files=2)
    log.write(b"before\n")
    log.close()
    (folder / "driver.log").unlink()
    folder.rmdir()  # the log's folder vanished: writes fail (ENOENT) and must not stop the pump
    log = RotatingLog(str(folder / "driver.log"), max_bytes=1000, files=2)
    log.write(b"lost line\n")
    folder.mkdir()
    log.write(b"after\n")
    log.close()
    lines = (folder / "driver.log").read_text().splitlines()
    assert lines[0].startswith("[airflow-async-stream: 10 bytes of driver output dropped: No such file")
    assert lines[1] == "after"


def test_the_pump_process_caps_a_flood_and_keeps_the_last_lines(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    process, output = start_pump(str(path), 64 * 1024, 3)
    with os.fdopen(output, "wb") as out:
        for n in range(100_000):  # about 5 MB: far more than the pipe holds, so a slow pump would block us
            out.write(b"%06d %s\n" % (n, b"y" * 40))
    assert process.wait(timeout=60) == 0  # end of file ends it
    sizes = _sizes(path, 5)
    assert len(sizes) == 3 and sum(sizes.values()) <= 3 * 64 * 1024
    assert tail_lines(lambda p: Path(p).read_bytes(), str(path), 1).startswith("099999 ")


def test_a_log_that_cannot_be_created_fails_before_anything_starts(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        start_pump(str(tmp_path / "missing" / "driver.log"), 1000, 2)


def test_the_tail_reads_on_into_the_previous_file_after_a_rotation(tmp_path: Path) -> None:
    path = tmp_path / "driver.log"
    (tmp_path / "driver.log.1").write_text("one\ntwo\nthree\n")
    path.write_text("four\n")
    read = lambda p: Path(p).read_bytes()  # noqa: E731
    assert tail_lines(read, str(path), 3) == "two\nthree\nfour"
    assert tail_lines(read, str(tmp_path / "none.log"), 3) == ""


def test_a_disk_that_stays_full_never_stops_the_pump() -> None:
    """/dev/full fails every write (ENOSPC): the note about dropped output fails too, and the pump goes on."""
    log = RotatingLog("/dev/full", max_bytes=1000, files=1)
    for _ in range(3):
        log.write(b"x" * 10 + b"\n")  # must not raise
    log.close()
    assert log._dropped == 33 and log._drop_reason == "No space left on device"
