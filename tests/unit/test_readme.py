"""The README works as written: its DAGs load, its specs validate, its commands exist, its files exist, and its
figures agree with each other and with the benchmark results.

A code block is preceded by a mark saying what it is, an HTML comment the rendered README does not show:
``<!-- readme-test: dags ID ... -->`` (a Python DAG file defining exactly these DAG ids), ``script WHY`` (Python
that is no DAG: checked for undefined names and imports that do not exist), ``fragment WHY`` (a part of a file:
skipped), ``fleet-file`` (a desired folder's ``_fleet.yaml``), ``doctor WHY`` (``doctor`` commands, run here on
a checkpoint async mode left with gaps). A YAML block without a mark is a whole job spec.
"""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from airflow.dag_processing.dagbag import DagBag

from airflow_async_stream.cli.commands import build_parser
from tests.helpers import make_checkpoint
from tests.readme_blocks import (
    BLOCKS,
    DAG_FOLDER,
    DOCUMENTS,
    FENCE,
    FULL_SPEC_NAME,
    PYTHON,
    README,
    REPO,
    TEXT,
    Block,
    full_spec,
)
from tests.unit.cli_run import cli


def test_every_python_block_says_what_it_is() -> None:
    unmarked = [str(b) for b in PYTHON if b.kind not in ("dags", "script", "fragment")]
    assert not unmarked, f"mark these blocks (see this test's docstring): {unmarked}"
    assert sum(b.kind == "dags" for b in PYTHON) >= 3


@pytest.mark.parametrize("block", [b for b in PYTHON if b.kind == "dags"], ids=str)
def test_a_dag_block_loads_with_the_dag_ids_it_promises_every_task_connected(block: Block, tmp_path: Path) -> None:
    dags, specs, desired = tmp_path / "dags", tmp_path / "dags" / "specs", tmp_path / "dags" / "desired"
    specs.mkdir(parents=True)
    desired.mkdir()
    (specs / f"{FULL_SPEC_NAME}.yaml").write_text(full_spec())
    (desired / f"{FULL_SPEC_NAME}.yaml").write_text(full_spec())
    [fleet] = [b.body for b in BLOCKS if b.kind == "fleet-file"]
    index = yaml.safe_load(fleet)["index"]
    (desired / "_fleet.yaml").write_text(fleet.replace(index, str(tmp_path / "fleet-index")))
    assert DAG_FOLDER in block.body, f"{block} names no file under {DAG_FOLDER}"
    (dags / "readme_dag.py").write_text(block.body.replace(DAG_FOLDER, str(dags)))

    bag = DagBag(dag_folder=str(dags / "readme_dag.py"))

    assert bag.import_errors == {}, f"{block}: {bag.import_errors}"
    assert sorted(bag.dag_ids) == sorted(block.arg.split()), block
    for dag in bag.dags.values():
        assert dag.task_dict, f"{block}: DAG {dag.dag_id} has no task"
        reached, todo = set(), [next(iter(dag.task_dict))]
        while todo:
            task = dag.task_dict[todo.pop()]
            if task.task_id not in reached:
                reached.add(task.task_id)
                todo += [*task.upstream_task_ids, *task.downstream_task_ids]
        assert reached == set(dag.task_dict), f"{block}: tasks not connected: {set(dag.task_dict) - reached}"


def _undefined_names(source: str) -> str:
    checked = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--isolated", "--select", "F", "--output-format", "concise", "-"],
        input=source,
        capture_output=True,
        text=True,
    )
    return checked.stdout if checked.returncode else ""


@pytest.mark.parametrize("block", [b for b in PYTHON if b.kind in ("dags", "script")], ids=str)
def test_python_blocks_name_nothing_undefined_and_import_what_exists(block: Block) -> None:
    assert not _undefined_names(block.body), f"{block}:\n{_undefined_names(block.body)}"
    for node in ast.walk(ast.parse(block.body)):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "airflow_async_stream":
            module = importlib.import_module(node.module)
            missing = [a.name for a in node.names if not hasattr(module, a.name)]
            assert not missing, f"{block}: {node.module} has no {missing}"


def test_the_check_for_undefined_names_catches_what_it_should() -> None:
    """The README once used a `df` it never defined."""
    assert "F821" in _undefined_names('writer = df.writeStream.format("kafka")\n')


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.lang == "yaml" and b.kind is None], ids=str)
def test_a_whole_spec_in_the_readme_passes_validate(block: Block, tmp_path: Path) -> None:
    from airflow_async_stream.cli.commands import main

    path = tmp_path / "spec.yaml"
    path.write_text(block.body)
    assert main(["validate", str(path)]) == 0, block


def test_yaml_blocks_are_specs_or_say_what_they_are() -> None:
    for block in (b for b in BLOCKS if b.lang == "yaml"):
        assert block.kind in (None, "fragment", "fleet-file"), block
        if block.kind is None:
            assert {"name", "checkpoint", "source", "sink"} <= set(yaml.safe_load(block.body)), block


def _cli_lines() -> list[tuple[Block, str]]:
    lines = []
    for block in BLOCKS:
        for line in block.body.splitlines():
            if "airflow-async-stream " in line and not line.lstrip().startswith("#"):
                lines.append((block, line))
    return lines


def test_every_cli_command_the_readme_shows_exists() -> None:
    lines = _cli_lines()
    assert len(lines) >= 15
    parser = build_parser()
    for block, line in lines:
        command = line.split("airflow-async-stream ", 1)[1]
        command = re.sub(r"\s+#.*$", "", command)  # a comment
        command = re.sub(r"\[[^\]]*\]", "", command)  # [--optional] parts
        command = command.split(" > ")[0]  # a redirect
        try:
            parser.parse_args(shlex.split(command))
        except SystemExit:
            pytest.fail(f"{block}: not a command this CLI takes: {line.strip()}")


def test_the_doctor_commands_run_as_written_on_a_checkpoint_left_with_gaps(tmp_path: Path) -> None:
    [block] = [b for b in BLOCKS if b.kind == "doctor"]
    checkpoint = make_checkpoint(tmp_path / "ck", [0, 4, 7], [0, 4, 7])
    answers = []
    for line in block.body.splitlines():
        command = shlex.split(re.sub(r"\s+#.*$", "", line).replace("/data/ck/clicks-to-alerts", checkpoint))
        assert command[0] == "airflow-async-stream", line
        answers.append(cli(*command[1:]))
    text, as_json = answers
    assert (text.returncode, as_json.returncode) == (1, 1), (text.stderr, as_json.stderr)
    assert "diagnosis    batch_missing: a synchronous restart would die with" in text.stdout
    assert json.loads(as_json.stdout)["diagnosis"] == "batch_missing"


def test_every_script_and_file_the_readme_names_exists() -> None:
    for script in re.findall(r"bash (scripts/[\w.]+)", TEXT):
        assert (REPO / script).is_file(), script
    for name in set(re.findall(r"`([\w./-]+\.(?:py|sh|md|png|toml|yaml|json))`", TEXT)):
        if "/" not in name and not name.endswith((".md", ".toml")):
            continue  # a bare file name: a control-area record (spec.json, ...) or a spec's own name
        if name.startswith(("/", "~", "dags/specs/clicks-to-alerts", "specs/")) or "<" in name:
            continue  # a user's path in an example
        assert (REPO / name).exists() or (REPO / "airflow_async_stream" / name).exists(), name
    for file, text in DOCUMENTS.items():  # README.md, docs/lineage.md; a page in docs/ links its siblings by name
        for document in set(re.findall(r"(?<![\w/.-])([\w/-]+\.md)\b", text)):
            found = REPO / document if "/" in document or file == "README.md" else REPO / "docs" / document
            assert found.is_file() or (REPO / document).is_file(), f"{file} names {document}, which is not here"


def test_every_page_in_docs_is_linked_from_the_readme() -> None:
    for file in DOCUMENTS:
        assert file == "README.md" or f"]({file})" in README, f"the README links no {file}: a reader never finds it"


def _percent_range(text: str) -> tuple[int, int]:
    low, high = re.search(r"(\d+)–(\d+) %", text).groups()  # type: ignore[union-attr]
    return int(low), int(high)


def test_the_latency_figures_agree_with_each_other_and_the_results() -> None:
    results = json.loads((REPO / "bench" / "results" / "results.json").read_text())
    cuts = results["latency"]["provider"]["async_reduction"]
    measured = sorted(round(100 * v) for v in cuts.values())
    intro = README.split("## Two commands", 1)[0]
    assert _percent_range(intro.split("turning it on", 1)[1]) == (measured[0], measured[-1])
    shown = re.search(r"Async reduction: (\d+) % \(interval 1000\) and (\d+) % \(interval 0\)", TEXT)
    assert shown and (int(shown[1]), int(shown[2])) == (round(100 * cuts["async1000"]), round(100 * cuts["async0"]))


def test_the_benchmark_duration_is_one_figure() -> None:
    readme = re.search(r"`bash scripts/bench\.sh` \(about (\d+) minutes", TEXT)
    script = re.search(r"about (\d+) minutes", (REPO / "scripts" / "bench.sh").read_text())
    assert readme and script and readme[1] == script[1]


def test_the_switch_and_fleet_figures_are_the_results() -> None:
    results = json.loads((REPO / "bench" / "results" / "results.json").read_text())
    section = TEXT.split("**In-place switches beside their floor**", 1)[1].split("**Migration cost.**", 1)[0]
    sources = {"`rate` (the main job's)": "rate", "`rate-micro-batch`": "rate_micro_batch"}
    kinds = {
        "to interval 0": "to_interval_0",
        "gated, to synchronous": "to_synchronous",
        "back to async 3000 ms": "to_async_3000",
    }
    rows = re.findall(r"^\| (`[^|]+) \| ([^|]+) \| [^|]+ \| [^|]+ \| \*\*([\d.]+)\*\* \|$", section, re.M)
    assert len(rows) == 6
    for source, kind, ratio in rows:
        measured = results["switch"][sources[source]]["ratio_provider_over_plain_p50"][kinds[kind]]
        assert float(ratio) == round(measured, 2), (source, kind)
    fleet = TEXT.split("**Fleet cost**", 1)[1].split("**Sensor cost.**", 1)[0]
    walls = re.findall(r"^\| (\d) \| (\d) \| \*\*([\d.]+) s\*\* \|", fleet, re.M)
    assert [(int(n), int(p), float(w)) for n, p, w in walls] == [
        (v["jobs"], v["max_parallel"], round(v["wall_s"], 1)) for k, v in results["fleet"].items() if k.startswith("n")
    ]


def _anchors(text: str) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation but - and _ dropped, spaces to -."""
    prose = FENCE.sub("", text)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"(?m)^#+ (.+)$", prose)}


def test_every_link_to_a_heading_finds_it() -> None:
    """The contents and the cross references: a renamed or moved section must not leave a dead link."""
    pages = {file: _anchors(text) for file, text in DOCUMENTS.items()}
    checked = 0
    for file, text in DOCUMENTS.items():
        for target, anchor in re.findall(r"\]\(([\w./-]*)#([\w-]+)\)", text):
            page = file if not target else str((REPO / file).parent.joinpath(target).resolve().relative_to(REPO))
            assert anchor in pages[page], f"{file} links {target}#{anchor}: no such heading in {page}"
            checked += 1
    assert checked >= 15
