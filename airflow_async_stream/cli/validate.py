"""``validate``: check spec files (the rules that need no JVM), with ``--checkpoint`` against each job's
checkpoint as a deploy judges it (read-only), and with ``--analyze`` build each valid spec's query on one local
Spark, as the driver would, without starting it (driver/analyze.py).

One line per problem, ``FILE: FIELD: REASON``; ``FILE: not checked: ...`` for what this host cannot reach. Exit
0 when every spec is right, 2 when one is wrong or the analysis could not run (no Java, no pyspark).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from airflow_async_stream.cli import EXIT_BAD_INPUT, EXIT_OK
from airflow_async_stream.exceptions import SpecError
from airflow_async_stream.spec.folder import spec_files
from airflow_async_stream.spec.load import load_spec
from airflow_async_stream.spec.model import JobSpec
from airflow_async_stream.spec.versions import SPARK_VERSION_ENV, judged, judging

__all__ = ["add_spark_version", "add_validate", "judged_line", "judging_for", "spec_paths", "summary"]


def spec_paths(names: list[str]) -> tuple[list[str], list[str]]:
    """The files named, with each folder replaced by its job spec files (as a rollout reads a desired folder:
    YAML or JSON, not hidden, not ``_fleet.yaml``); and the names that give none (empty folders, nothing there)."""
    paths, empty = [], []
    for name in names:
        if not Path(name).exists() and not Path(name).is_symlink():
            empty.append(name)
            continue
        if not Path(name).is_dir():
            paths.append(name)
            continue
        found = [str(p) for p in spec_files(Path(name))]
        paths += found
        if not found:
            empty.append(name)
    return paths, empty


def _load(paths: list[str], empty: list[str]) -> tuple[list[tuple[str, JobSpec]], dict[str, dict[str, Any]]]:
    """The specs that load, and a verdict for each name that does not (or each folder without specs)."""
    loaded: list[tuple[str, JobSpec]] = []
    verdicts: dict[str, dict[str, Any]] = {}
    for folder in empty:
        why = ("(folder)", "holds no job spec file (.yaml, .yml, .json)")
        if not Path(folder).exists():
            why = ("(path)", "does not exist: give spec files (.yaml, .yml, .json) or folders of them")
        verdicts[folder] = _verdict(folder, None, [why])
    for name in paths:
        try:
            loaded.append((name, load_spec(name)))
        except SpecError as exc:
            verdicts[name] = _verdict(name, None, exc.problems)
    return loaded, verdicts


def _verdict(
    file: str, job: str | None, problems: list[tuple[str, str]], spec: JobSpec | None = None, **more: Any
) -> dict[str, Any]:
    async_on = spec.async_progress.enabled if spec else None
    return {
        "file": file,
        "job": job,
        "ok": not problems,
        "problems": [{"field": f, "reason": r} for f, r in problems],
        "async_progress": async_on,
        "auto": list(spec.async_progress.auto or []) if spec else [],
        **more,
    }


def _print(verdict: dict[str, Any], quiet: bool) -> None:
    file = verdict["file"]
    for problem in verdict["problems"]:
        print(f"{file}: {problem['field']}: {problem['reason']}")
    if quiet:
        return
    for note in verdict.get("not_checked", []):
        print(f"{file}: not checked: {note}")
    if verdict["ok"]:
        state = "on" if verdict["async_progress"] else "off"
        if verdict.get("auto"):
            state += f", {' and '.join(verdict['auto'])} set by the tuner (auto)"
        how = f"; analyzed in {verdict['seconds']:.2f} s" if "seconds" in verdict else ""
        print(f"{file}: ok ({verdict['job']}, async progress {state}{how})", flush=True)


def _against_checkpoints(loaded: list[tuple[str, JobSpec]], verdicts: dict[str, dict[str, Any]]) -> None:
    """What a deploy would refuse of each spec on its checkpoint (a synchronous start over async mode's gaps):
    a problem on ``checkpoint``; a checkpoint this host cannot read is noted, not failed. Reads, never writes."""
    from airflow_async_stream.driver.start import refuse_unsafe_sync_start
    from airflow_async_stream.exceptions import UnsafeSyncRestartError

    for name, spec in loaded:
        try:
            refuse_unsafe_sync_start(spec, allow=False)
        except UnsafeSyncRestartError as exc:
            verdicts[name] = _verdict(name, spec.name, [("checkpoint", str(exc).removeprefix(f"{spec.name}: "))], spec)
        except (OSError, ImportError, ValueError) as exc:  # a storage this host has no client for, or cannot reach
            verdicts[name] = _verdict(name, spec.name, [], spec, not_checked=[f"checkpoint: not read here: {exc}"])
        else:
            verdicts[name] = _verdict(name, spec.name, [], spec)


def _analyze(loaded: list[tuple[str, JobSpec]], args: argparse.Namespace) -> tuple[dict[str, dict[str, Any]], Any]:
    from airflow_async_stream.driver.analyze import Analysis, analyze_specs

    specs = dict(loaded)
    verdicts: dict[str, dict[str, Any]] = {}

    def seen(analysis: Analysis) -> None:
        verdicts[analysis.file] = _verdict(
            analysis.file,
            analysis.job,
            analysis.problems,
            specs[analysis.file],
            not_checked=analysis.not_checked,
            seconds=analysis.seconds,
        )
        if not args.json:
            _print(verdicts[analysis.file], args.quiet)

    count = f"{len(loaded)} spec{'' if len(loaded) == 1 else 's'}"
    print(f"analyzing {count} on a local Spark (one JVM start) ...", file=sys.stderr, flush=True)
    run = analyze_specs(loaded, on_analysis=seen)
    return verdicts, run


def _checkpoint_step(
    loaded: list[tuple[str, JobSpec]], verdicts: dict[str, dict[str, Any]], args: argparse.Namespace
) -> tuple[list[tuple[str, JobSpec]], dict[str, dict[str, Any]]]:
    """``--checkpoint``: the specs a deploy would refuse get their verdict now; the rest go on, with notes."""
    checked: dict[str, dict[str, Any]] = {}
    if not args.checkpoint:
        return loaded, checked
    _against_checkpoints(loaded, checked)
    for name, verdict in checked.items():
        if not verdict["ok"]:
            verdicts[name] = verdict
            if not args.json:
                _print(verdict, args.quiet)
    return [(name, spec) for name, spec in loaded if checked[name]["ok"]], checked


def _analyze_step(
    loaded: list[tuple[str, JobSpec]],
    checked: dict[str, dict[str, Any]],
    verdicts: dict[str, dict[str, Any]],
    args: argparse.Namespace,
) -> Any:
    """``--analyze``: each spec's query built on one local Spark (a checkpoint's notes kept beside)."""
    for name, _ in loaded if not (args.json or args.quiet) else []:  # what the analysis's lines will not repeat
        for note in checked.get(name, {}).get("not_checked", []):
            print(f"{name}: not checked: {note}")
    analyzed, run = _analyze(loaded, args)
    for name, verdict in analyzed.items():
        verdict["not_checked"] = checked.get(name, {}).get("not_checked", []) + verdict["not_checked"]
    verdicts.update(analyzed)
    return run


@contextlib.contextmanager
def judging_for(flag: str | None) -> Iterator[str]:
    """Judge specs for the Spark ``--spark-version`` names, else the setting's or the installed pyspark's
    (spec/versions.py); the line that says which."""
    _, version, why = (None, flag, "--spark-version") if flag else judged()
    with judging(version, why):
        yield f"Spark {version} ({why})"


def judged_line(spark: str) -> str:
    """What ``validate`` and ``plan`` print of the Spark ``judging_for`` judged for."""
    return f"judged for {spark}; a deploy judges again for the Spark it submits to"


def add_spark_version(parser: Any) -> None:
    parser.add_argument(
        "--spark-version",
        metavar="X.Y.Z",
        help=f"judge the specs for this Spark (3.5 to 4.3); default: ${SPARK_VERSION_ENV}, else the installed pyspark",
    )


def cmd_validate(args: argparse.Namespace) -> int:
    with judging_for(args.spark_version) as spark:
        return _validate(args, spark)


def _validate(args: argparse.Namespace, spark_judged: str) -> int:
    paths, empty = spec_paths(args.files)
    loaded, verdicts = _load(paths, empty)
    if not args.json:
        for verdict in verdicts.values():
            _print(verdict, args.quiet)
    loaded, checked = _checkpoint_step(loaded, verdicts, args)
    run = _analyze_step(loaded, checked, verdicts, args) if args.analyze and loaded else None
    for name, spec in loaded if run is None else []:
        verdicts[name] = checked.get(name) or _verdict(name, spec.name, [], spec)
        if not args.json:
            _print(verdicts[name], args.quiet)
    ordered = [verdicts[name] for name in [*empty, *paths]]
    wrong = sum(1 for v in ordered if not v["ok"])
    if args.json:
        spark = {"version": run.spark_version, "start_seconds": run.spark_start_seconds} if run else None
        seconds = run.seconds if run else None
        document = {"ok": not wrong, "files": ordered, "judged_for": spark_judged, "spark": spark, "seconds": seconds}
        print(json.dumps(document, indent=2))
        return EXIT_BAD_INPUT if wrong else EXIT_OK
    if run and not args.quiet:
        print(summary(len(ordered), wrong, len(loaded), run))
    if not args.quiet and not wrong:  # a finding names the Spark where it depends on it (FILE: FIELD: REASON)
        print(judged_line(spark_judged))
    return EXIT_BAD_INPUT if wrong else EXIT_OK


def summary(files: int, wrong: int, analyzed: int, run: Any) -> str:
    """'6 files: 1 ok, 5 wrong; 1 analyzed in 3.2 s (...), 5 refused before it'."""
    refused = files - analyzed
    before = f", {refused} refused before it" if refused else ""
    return (
        f"{files} file{'' if files == 1 else 's'}: {files - wrong} ok, {wrong} wrong; {analyzed} analyzed in "
        f"{run.seconds:.1f} s (Spark {run.spark_version} started in {run.spark_start_seconds:.1f} s){before}"
    )


def add_validate(sub: Any) -> None:
    p = sub.add_parser(
        "validate",
        help="validate job spec files (exit 2 and one line per error if any is bad; --analyze asks a local Spark)",
    )
    p.add_argument("files", nargs="+", metavar="FILE_OR_DIR", help="spec files, or folders of them")
    p.add_argument("-q", "--quiet", action="store_true", help="print only errors")
    p.add_argument(
        "--analyze",
        action="store_true",
        help="also build each query on a local Spark without starting it (SQL, columns, types, stateful operators "
        "with async on, source options, output mode); one JVM for all files; needs Java 17+",
    )
    p.add_argument(
        "--checkpoint",
        action="store_true",
        help="also judge each spec against its checkpoint as a deploy does, read-only (a synchronous spec over a "
        "checkpoint async mode left with gaps is refused: run the safe-disable migration)",
    )
    p.add_argument("--json", action="store_true", help="machine-readable output: every file's verdict")
    add_spark_version(p)
    p.set_defaults(func=cmd_validate)
