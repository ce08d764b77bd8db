"""Module paths and names of the previous release, kept working for one release with a DeprecationWarning.

An old module path (``airflow_async_stream.control``) imports as a small module that hands out the new
module's names; an old name in a module that stays (``migrations.safe_disable_async_progress``) is answered
by that module's ``__getattr__`` through :func:`renamed`. Both warn once per use, naming the new place.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import warnings
from types import ModuleType
from typing import Any

__all__ = ["MODULES", "NAMES", "install", "renamed", "renamed_argument"]

_P = "airflow_async_stream"

#: Old module path -> new module path (both without the package prefix); a module split in parts names them
#: all, and its old path hands out the names of every part.
MODULES: dict[str, str | tuple[str, ...]] = {
    "spec_folder": "spec.folder",
    "interpolation": "spec.interpolation",
    "secret_options": "spec.secret_options",
    "control": ("state.control", "state.records", "state.liveness"),
    "lease": "state.hold",
    "fence": "state.fence",
    "progress_log": "state.progress_log",
    "checkpoint": "state.checkpoint",
    "registry": "state.registry",
    "continuity": "insight.batches",
    "launcher": ("driver.launcher", "driver.local", "driver.deferred"),
    "deployer": "driver.deploy",
    "lifecycle": ("driver.start", "driver.stop"),
    "driver_process": "driver.process",
    "driver_log": "driver.log",
    "driver_args": "driver.args",
    "packages": "driver.maven_packages",
    "commit_watch": "driver.commits",
    "in_place": "switch.allowed",
    "reconfigure": ("switch.request", "switch.account"),
    "targets": "cli.names",
    "rollout.dags": "factories.rollout",
    "migrations.safe_disable": "factories.safe_disable",
    "operators.lease": "operators.hold",
}
_BY_FULL_NAME = {
    f"{_P}.{old}": tuple(f"{_P}.{part}" for part in ((new,) if isinstance(new, str) else new))
    for old, new in MODULES.items()
}


def _warn(old: str, new: str, stacklevel: int) -> None:
    message = f"{old} moved to {new}; the old name goes in the next release"
    warnings.warn(message, DeprecationWarning, stacklevel=stacklevel + 1)


class _Alias(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None  # the default module; exec_module makes it hand out the new module's names

    def exec_module(self, module: ModuleType) -> None:
        parts = _BY_FULL_NAME[module.__name__]
        _warn(module.__name__, " and ".join(parts), 2)
        targets = [importlib.import_module(part) for part in parts]

        def forward(name: str) -> Any:
            for target in targets:
                if hasattr(target, name):
                    return getattr(target, name)
            raise AttributeError(f"module {module.__name__!r} has no attribute {name!r}")

        module.__getattr__ = forward  # type: ignore[method-assign]
        module.__all__ = [name for target in targets for name in getattr(target, "__all__", ())]  # type: ignore[attr-defined]
        module.__doc__ = f"Moved to {' and '.join(parts)}."


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname: str, path: Any, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        if fullname not in _BY_FULL_NAME:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Alias())


def install() -> None:
    """Answer the old module paths (idempotent; the package's ``__init__`` calls it)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _Finder())


_MIGRATIONS = f"{_P}.migrations"
#: Names of the previous release in a module that stays: module -> old name -> (new module, new name).
NAMES: dict[str, dict[str, tuple[str, str]]] = {
    f"{_P}.exceptions": {
        "ReconfigureError": (f"{_P}.exceptions", "SwitchError"),
        "ReconfigureTimeoutError": (f"{_P}.exceptions", "SwitchTimeoutError"),
    },
    f"{_P}.switch.request": {"reconfigure": (f"{_P}.switch.request", "switch_in_place")},
    # cli.py and spec.py became packages: their other names live in the parts.
    f"{_P}.cli": {
        "build_parser": (f"{_P}.cli.commands", "build_parser"),
        "status_report": (f"{_P}.cli.show", "status_report"),
    },
    f"{_P}.spec": {n: (f"{_P}.spec.rules", n) for n in ("RuleViolationError", "rule_violations")},
    f"{_P}.cli.names": {
        "Target": (f"{_P}.cli.names", "NamedJob"),
        "TargetError": (f"{_P}.cli.names", "JobNotFoundError"),
        "resolve_target": (f"{_P}.cli.names", "find_job"),
    },
    f"{_P}.operators.hold": {
        "TakeJobLeaseOperator": (f"{_P}.operators.hold", "TakeJobHoldOperator"),
        "ReleaseJobLeaseOperator": (f"{_P}.operators.hold", "ReleaseJobHoldOperator"),
    },
    _MIGRATIONS: {"safe_disable_async_progress": (f"{_P}.factories", "safe_disable_async_progress")},
    f"{_MIGRATIONS}.safe_disable_steps": {
        **{
            n: (f"{_MIGRATIONS}.specs", n) for n in ("ASYNC_EVERY_BATCH", "SYNCHRONOUS", "at_interval_0", "synchronous")
        },
        **{n: (f"{_MIGRATIONS}.outcome", n) for n in ("Switch", "failure_reason", "note_failure", "rolled_back_error")},
        "run_safe_disable": (f"{_MIGRATIONS}.run", "run_safe_disable"),
    },
}


def renamed(module: str, name: str) -> Any:
    """For a module's ``__getattr__``: the object an old ``name`` of ``module`` now is (see NAMES), with a
    warning; AttributeError for any other name."""
    names = NAMES.get(module, {})
    if name not in names:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    new_module, new_name = names[name]
    _warn(f"{module}.{name}", f"{new_module}.{new_name}", 3)  # the caller of __getattr__
    return getattr(importlib.import_module(new_module), new_name)


def renamed_argument(function: str, old: str, new: str) -> None:
    """Warn that ``function(old=...)`` is now ``function(new=...)`` (at the caller's caller's line)."""
    _warn(f"{function}({old}=...)", f"{function}({new}=...)", 3)
