"""The previous release's module paths and names still work for one release, each with a DeprecationWarning."""

from __future__ import annotations

import subprocess
import sys

import pytest

from airflow_async_stream._moved import MODULES, NAMES


@pytest.mark.parametrize("old", sorted(MODULES))
def test_an_old_module_path_warns_and_hands_out_the_new_modules_names(old: str) -> None:
    """In a fresh interpreter, so the old path is not imported yet. The new modules are imported first: Airflow
    sets its own warning filters when it loads, which would hide the warning under test."""
    parts = [MODULES[old]] if isinstance(MODULES[old], str) else list(MODULES[old])
    code = f"""
import importlib, warnings
parts = [importlib.import_module("airflow_async_stream." + part) for part in {parts!r}]
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old = importlib.import_module("airflow_async_stream.{old}")
names = [n for part in parts for n in part.__all__]
assert names, "the new modules export nothing"
assert all(getattr(old, n) is getattr(part, n) for part in parts for n in part.__all__)
assert old.__all__ == names
[w] = [w for w in caught if issubclass(w.category, DeprecationWarning) and "moved to" in str(w.message)]
print(w.message)
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    new = " and ".join(f"airflow_async_stream.{part}" for part in parts)
    assert result.stdout.strip() == f"airflow_async_stream.{old} moved to {new}; the old name goes in the next release"


def test_a_name_unknown_to_an_old_path_is_an_attribute_error() -> None:
    sys.modules.pop("airflow_async_stream.registry", None)  # imported afresh, so it warns here
    with pytest.warns(DeprecationWarning):
        import airflow_async_stream.registry as old  # noqa: F401 (the alias under test)
    with pytest.raises(AttributeError, match="no_such_name"):
        old.no_such_name  # noqa: B018


def test_the_migration_taskgroup_under_its_old_name_warns_at_the_callers_line() -> None:
    import airflow_async_stream.migrations as migrations
    from airflow_async_stream.factories import safe_disable_async_progress

    with pytest.warns(DeprecationWarning, match="moved to airflow_async_stream.factories") as caught:
        old = migrations.safe_disable_async_progress
    assert old is safe_disable_async_progress
    assert caught[0].filename == __file__


def test_the_command_line_runs_as_a_module() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "airflow_async_stream.cli", "--help"], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert "validate" in result.stdout


def test_the_hold_operators_under_their_old_names_warn() -> None:
    from airflow_async_stream.operators import hold

    for old, new in [
        ("TakeJobLeaseOperator", "TakeJobHoldOperator"),
        ("ReleaseJobLeaseOperator", "ReleaseJobHoldOperator"),
    ]:
        with pytest.warns(DeprecationWarning, match=f"operators.hold.{old} moved to .*operators.hold.{new}"):
            assert getattr(hold, old) is getattr(hold, new)


def test_the_migrations_old_hold_argument_warns_and_still_sets_the_hold(tmp_path) -> None:
    from airflow.sdk import DAG

    from airflow_async_stream.factories import safe_disable_async_progress

    spec = {"name": "j", "checkpoint": str(tmp_path / "ck"), "source": {"format": "rate"}, "sink": {"format": "noop"}}
    spec["async_progress"] = {"enabled": True}
    with DAG("old_argument", schedule=None), pytest.warns(DeprecationWarning, match=r"\(lease_ttl_s=...\) moved to"):
        group = safe_disable_async_progress(spec, lease_ttl_s=123.0)
    [hold] = [task for task in group if task.task_id.endswith("hold_job")]
    assert hold.ttl_s == 123.0


def test_the_switch_under_its_old_names_warns() -> None:
    from airflow_async_stream import exceptions
    from airflow_async_stream.switch import request

    with pytest.warns(DeprecationWarning, match=r"switch\.request\.reconfigure moved to .*switch_in_place"):
        assert request.reconfigure is request.switch_in_place
    for old, new in [("ReconfigureError", "SwitchError"), ("ReconfigureTimeoutError", "SwitchTimeoutError")]:
        with pytest.warns(DeprecationWarning, match=f"exceptions.{old} moved to .*exceptions.{new}"):
            assert getattr(exceptions, old) is getattr(exceptions, new)


def test_the_reconfigure_command_still_runs_as_switch_and_says_so(tmp_path) -> None:
    """Both names answer the same (here: nothing runs at the target), the old one with a line on stderr."""
    argv = [sys.executable, "-m", "airflow_async_stream.cli"]
    args = [str(tmp_path / "nothing"), "--set", "async_progress.enabled=false"]
    new = subprocess.run([*argv, "switch", *args], capture_output=True, text=True, timeout=60)
    old = subprocess.run([*argv, "reconfigure", *args], capture_output=True, text=True, timeout=60)
    assert old.returncode == new.returncode != 0
    assert (
        old.stderr
        == "airflow-async-stream: 'reconfigure' is now 'switch'; the old name goes in the next release\n" + new.stderr
    )


def test_the_migration_steps_moved_out_of_safe_disable_steps_still_import() -> None:
    """The ones the steps still use are plain attributes there; the others answer with a warning."""
    import importlib
    import warnings

    from airflow_async_stream._moved import NAMES
    from airflow_async_stream.migrations import run, safe_disable_steps

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old, (module, new) in NAMES[safe_disable_steps.__name__].items():
            assert getattr(safe_disable_steps, old) is getattr(importlib.import_module(module), new)
    with pytest.warns(DeprecationWarning, match="safe_disable_steps.run_safe_disable moved to .*run.run_safe_disable"):
        assert safe_disable_steps.run_safe_disable is run.run_safe_disable


@pytest.mark.parametrize("module", sorted(NAMES))
def test_every_retired_name_still_resolves_to_what_it_is_now(module: str) -> None:
    import importlib
    import warnings

    from airflow_async_stream._moved import NAMES

    old_home = importlib.import_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for old, (new_module, new) in NAMES[module].items():
            assert getattr(old_home, old) is getattr(importlib.import_module(new_module), new), old
