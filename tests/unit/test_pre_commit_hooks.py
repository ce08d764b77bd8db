""".pre-commit-hooks.yaml: its hooks call commands this CLI takes, on the files a rollout reads, all in one call."""

from __future__ import annotations

import re
import shlex

import yaml

from airflow_async_stream.cli.commands import build_parser
from tests.session import REPO

HOOKS = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())


def _takes(hook: dict, path: str) -> bool:
    return bool(re.search(hook["files"], path)) and not re.search(hook["exclude"], path)


def test_each_hook_is_a_command_of_this_cli_run_once_with_every_file() -> None:
    assert {h["id"] for h in HOOKS} == {"async-stream-validate", "async-stream-analyze"}
    parser = build_parser()
    for hook in HOOKS:
        program, *args = shlex.split(hook["entry"])
        assert program == "airflow-async-stream"
        parsed = parser.parse_args([*args, "desired/a.yaml", "desired/b.yaml"])  # pre-commit appends the files
        assert parsed.files == ["desired/a.yaml", "desired/b.yaml"] and parsed.quiet
        assert hook["require_serial"] is True  # one call: one JVM for --analyze
    assert parser.parse_args(shlex.split(HOOKS[1]["entry"])[1:] + ["x.yaml"]).analyze


def test_the_hooks_take_the_job_files_a_rollout_reads_and_not_its_fleet_file() -> None:
    for hook in HOOKS:
        assert _takes(hook, "desired/clicks.yaml") and _takes(hook, "teams/a/desired/clicks.json")
        assert not _takes(hook, "desired/_fleet.yaml") and not _takes(hook, "desired/.draft.yaml")
        assert not _takes(hook, ".github/workflows/ci.yaml") and not _takes(hook, "desired/sub/x.yaml")
