"""A spec file is a page of settings: what could grow without bound while it is read (YAML aliases, nesting,
numbers, its size) is refused fast, with little memory, naming the file and the field or line; a checkpoint
path never climbs with ``..``; a message never echoes a long value whole."""

from __future__ import annotations

import json
import time
import tracemalloc
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.bounds import MAX_BYTES, MAX_DEPTH
from airflow_async_stream.spec.load import load_spec, parse_spec, read_spec_file
from tests.helpers import rate_noop
from tests.unit.cli_run import cli


def _laughs(levels: int = 9) -> str:
    """The "billion laughs": each level an alias list of ten of the one before (10**9 strings expanded)."""
    lines = ['a0: &a0 "lol"']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, levels + 1)]
    return "\n".join([*lines, f"name: x\ncheckpoint: /ck/x\nextra: *a{levels}"])


@pytest.fixture
def bounded() -> Iterator[None]:
    """Each refusal within a second and a few MB."""
    tracemalloc.start()
    started = time.monotonic()
    yield
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert time.monotonic() - started < 1.0
    assert peak < 8_000_000, f"{peak:,} bytes at the peak"


CASES = {
    "laughs.yaml": (_laughs(), r"\(line 2\): uses the YAML alias \*a0: aliases are not allowed"),
    "one-alias.yaml": ("base: &b {a: 1}\nname: x\ncopy: *b\n", r"\(line 3\): uses the YAML alias \*b"),
    "deep.yaml": ("[" * 100_000 + "]" * 100_000, rf"\(line 1\): nests deeper than {MAX_DEPTH} levels"),
    "deep.json": ("[" * 100_000 + "]" * 100_000, r"\(file\): is not valid JSON: maximum recursion depth"),
    "digits.yaml": ("name: x\nbatches: " + "9" * 5000, r"\(file\): is not valid YAML: Exceeds the limit"),
    "digits.json": ('{"name": "x", "n": ' + "9" * 5000 + "}", r"\(file\): is not valid JSON: Exceeds the limit"),
    "wide.yaml": (
        "name: x\nasync_progress:\n  checkpoint_interval_ms: " + "9" * 30,
        r"async_progress\.checkpoint_interval_ms: is a number past 64 bits \(30 digits\)",
    ),
    "nan.yaml": (
        "name: x\nhealth:\n  batch_stalled_after: .nan\n",
        r"health\.batch_stalled_after: must be a finite number",
    ),
    "big.yaml": (
        "# " + "x" * MAX_BYTES + "\nname: x\n",
        rf"\(file\): is 1,000,0\d\d bytes; a spec is at most {MAX_BYTES:,}",
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_file_that_could_grow_is_refused_fast_naming_where(name: str, tmp_path: Path, bounded: None) -> None:
    text, message = CASES[name]
    path = tmp_path / name
    path.write_text(text)

    with pytest.raises(SpecError, match=message) as caught:
        read_spec_file(path)
    assert caught.value.source == str(path)


def test_validate_refuses_the_billion_laughs_in_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "laughs.yaml").write_text(_laughs())
    started = time.monotonic()
    done = cli("validate", str(tmp_path / "laughs.yaml"))
    assert done.returncode == 2 and "aliases are not allowed" in done.stderr + done.stdout
    assert "Traceback" not in done.stderr and time.monotonic() - started < 30


def test_a_plain_spec_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "clicks.yaml"
    path.write_text(yaml.safe_dump(rate_noop("clicks", "/data/ck/clicks")))
    assert load_spec(path).name == "clicks"
    (tmp_path / "clicks.json").write_text(json.dumps(rate_noop("clicks", "/data/ck/clicks")))
    assert load_spec(tmp_path / "clicks.json").checkpoint == "/data/ck/clicks"


@pytest.mark.parametrize("checkpoint", ["/data/ck/../../../etc/cron.d/x", "s3://bucket/ck/../other", "/data/..\\x"])
def test_a_checkpoint_path_never_climbs(checkpoint: str) -> None:
    with pytest.raises(SpecError, match=r"checkpoint: must not climb out of a folder with '\.\.'"):
        parse_spec(rate_noop("x", checkpoint))
    assert parse_spec(rate_noop("x", "/data/ck..v2/x")).checkpoint == "/data/ck..v2/x"  # dots in a name are fine


def test_a_long_value_is_cut_in_the_message() -> None:
    with pytest.raises(SpecError) as caught:
        parse_spec(rate_noop("x" * 100_000, "/data/ck/x"))
    assert len(str(caught.value)) < 1_000 and "chars)" in str(caught.value)


def test_without_libyaml_the_pure_parser_refuses_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """PyYAML built without libyaml falls back to its Python parser: slower on deep nesting, same answers."""
    from airflow_async_stream.spec import bounds

    monkeypatch.setattr(bounds, "_PARSER", yaml.SafeLoader)
    assert bounds.yaml_problems("[" * 2000 + "]" * 2000) == [("(line 1)", f"nests deeper than {MAX_DEPTH} levels")]
    assert bounds.yaml_problems(CASES["one-alias.yaml"][0])[0][0] == "(line 3)"
