"""``${NAME}`` in a spec file reads only the environment variables ``[async_stream] spec_variables`` allows
(``ASYNC_STREAM_*`` by default): a spec is written by whoever can change the desired folder, and a worker's
environment holds its own credentials."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from airflow_async_stream.exceptions import SettingsError, SpecError
from airflow_async_stream.spec.interpolation import Allowed
from airflow_async_stream.spec.load import load_spec
from tests.helpers import rate_noop
from tests.unit.cli_run import cli

SECRET = "wJalrXUtnFEMI-not-a-real-key-42"
SETTING = "AIRFLOW__ASYNC_STREAM__SPEC_VARIABLES"


def _spec_file(folder: Path, sql: str, checkpoint: str = "/data/ck/leak") -> Path:
    spec = {**rate_noop("leak", checkpoint), "transform": {"sql": sql}}
    folder.mkdir(exist_ok=True)
    path = folder / "leak.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_the_reported_attack_a_workers_secret_key_never_reaches_plan_or_validate(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _spec_file(tmp_path / "desired", "SELECT '${AWS_SECRET_ACCESS_KEY}' AS k FROM source")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    monkeypatch.delenv(SETTING, raising=False)

    for command in (["plan", str(path.parent), "--json"], ["validate", str(path)]):
        done = cli(*command)
        assert done.returncode == 2, done
        assert SECRET not in done.stdout + done.stderr
        assert (
            "transform.sql: names the environment variable AWS_SECRET_ACCESS_KEY, which [async_stream] "
            "spec_variables does not allow (it allows: ASYNC_STREAM_*)" in done.stdout + done.stderr
        )


def test_a_default_does_not_make_a_variable_allowed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SETTING, raising=False)
    monkeypatch.setenv("HOME_TEAM_ROOT", "/data")
    with pytest.raises(SpecError, match=r"checkpoint: names the environment variable HOME_TEAM_ROOT, which"):
        load_spec(_spec_file(tmp_path, "SELECT * FROM source", "${HOME_TEAM_ROOT:-/data}/ck"))


def test_the_setting_names_variables_and_prefixes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SETTING, "CHECKPOINT_ROOT, TEAM_*")
    monkeypatch.setenv("CHECKPOINT_ROOT", "/data/ck")
    monkeypatch.setenv("TEAM_TABLE", "clicks")
    monkeypatch.setenv("ASYNC_STREAM_ROOT", "/elsewhere")
    spec = load_spec(_spec_file(tmp_path, "SELECT '${TEAM_TABLE}' AS t FROM source", "${CHECKPOINT_ROOT}/x"))
    assert (
        spec.checkpoint == "/data/ck/x" and spec.to_mapping()["transform"]["sql"] == "SELECT 'clicks' AS t FROM source"
    )
    with pytest.raises(SpecError, match=r"ASYNC_STREAM_ROOT, which .* \(it allows: CHECKPOINT_ROOT, TEAM_\*\)"):
        load_spec(_spec_file(tmp_path, "SELECT 1 AS x FROM source", "${ASYNC_STREAM_ROOT}/x"))
    monkeypatch.setenv(SETTING, "")
    with pytest.raises(SpecError, match=r"CHECKPOINT_ROOT, which .* \(it allows: none\)"):
        load_spec(_spec_file(tmp_path, "SELECT 1 AS x FROM source", "${CHECKPOINT_ROOT}/x"))


@pytest.mark.parametrize("setting", ["TEAM ROOT", "1X", "TEAM_*_ROOT", "*"])
def test_a_setting_that_names_no_variable_is_an_error_naming_it(setting: str) -> None:
    with pytest.raises(SettingsError, match=r"\[async_stream\] spec_variables: .* is neither a variable name"):
        Allowed.parse(setting)


def test_the_demo_folder_reads_its_own_prefix(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(SETTING, raising=False)
    monkeypatch.setenv("ASYNC_STREAM_DEMO_ROOT", str(tmp_path))
    spec = load_spec(Path(__file__).resolve().parents[3] / "dags" / "desired" / "clicks-enrich.yaml")
    assert spec.checkpoint == f"{tmp_path}/fleet/clicks-enrich"
    assert json.dumps(spec.to_mapping())  # nothing unexpanded left to serialise
