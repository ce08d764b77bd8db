"""The runtime bundle: what a job's driver imports beside Spark and the standard library, shipped with each deploy.

A driver may run where nothing of ours is installed (a YARN container, a Kubernetes pod, a bare Python):
the cluster needs Java, Spark and a Python only. The bundle is this package and the distributions the runtime
imports (pydantic and its compiled core, PyYAML, fsspec, and the fsspec client of a remote control area),
copied from this host's environment at their installed versions, byte-compiled, into
``$AIRFLOW_ASYNC_STREAM_HOME/bundles/<key>/``:

    driver.py     what spark-submit runs (runtime/entry.py): puts ``site/`` first on the path, runs the driver
    site/         the packages, and bundle.json saying which Python and platform they were built for
    runtime.zip   ``site/`` as one archive, for ``--archives runtime.zip#async-stream-runtime`` (cluster mode)

A packed folder, not a zip on ``--py-files``: pydantic's core is compiled, and Python imports no compiled
module from a zip; that ties a bundle to this host's Python minor version and platform. Built once per key
(package files, versions, Python), never removed while a driver may import from it (docs/runtime.md).
"""

from __future__ import annotations

import compileall
import contextlib
import hashlib
import importlib.metadata
import json
import logging
import os
import py_compile
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement

from airflow_async_stream.exceptions import DeployError
from airflow_async_stream.runtime.entry import ARCHIVE_ALIAS, MANIFEST

__all__ = [
    "ARCHIVE_ALIAS",
    "MANIFEST",
    "RUNTIME_DISTRIBUTIONS",
    "Bundle",
    "bundles_dir",
    "refuse_driver_python",
    "runtime_bundle",
]

#: What the runtime imports beyond the standard library and pyspark (their own requirements follow).
RUNTIME_DISTRIBUTIONS = ("pydantic", "pyyaml", "fsspec")
#: The fsspec client a driver needs for a control area on a remote protocol (the package extras' clients).
_CLIENTS = {
    **dict.fromkeys(("s3", "s3a", "s3n"), "s3fs"),
    **dict.fromkeys(("abfs", "abfss", "az", "adl"), "adlfs"),
    **dict.fromkeys(("gs", "gcs"), "gcsfs"),
}
_PACKAGE = Path(__file__).resolve().parent.parent
_log = logging.getLogger(__name__)
_SKIPPED = shutil.ignore_patterns("__pycache__", "*.pyc")
#: The bundle each (folder, protocols) led to in this process.
_KNOWN: dict[tuple[str, tuple[str, ...]], Path] = {}


@dataclass(frozen=True)
class Bundle:
    """One built bundle: its folder and what a command line names of it."""

    folder: Path
    #: Seconds this call spent building it; 0.0 when it was already there.
    built_s: float = 0.0

    @property
    def key(self) -> str:
        return self.folder.name

    @property
    def entry(self) -> Path:
        return self.folder / "driver.py"

    @property
    def site(self) -> Path:
        return self.folder / "site"

    @property
    def archive(self) -> Path:
        return self.folder / "runtime.zip"

    def manifest(self) -> dict[str, object]:
        loaded: dict[str, object] = json.loads((self.site / MANIFEST).read_text())
        return loaded


def bundles_dir() -> Path:
    """``$AIRFLOW_ASYNC_STREAM_BUNDLES``, else ``bundles/`` in ``$AIRFLOW_ASYNC_STREAM_HOME``."""
    own = os.environ.get("AIRFLOW_ASYNC_STREAM_BUNDLES")
    if own:
        return Path(own)
    home = os.environ.get("AIRFLOW_ASYNC_STREAM_HOME") or str(Path.home() / ".airflow-async-stream")
    return Path(home) / "bundles"


def runtime_bundle(protocols: Iterable[str] = ()) -> Bundle:
    """The bundle for a driver whose control area or checkpoint is on ``protocols`` (fsspec names): built on
    first use, reused after; safe when several workers build it at once (each builds aside, one rename wins)."""
    wanted = (str(bundles_dir()), tuple(sorted(set(protocols))))
    known = _KNOWN.get(wanted)
    if known is not None and (known / "site" / MANIFEST).is_file():
        return Bundle(known)  # this process already looked: its package cannot have changed under it
    distributions = _closure([*RUNTIME_DISTRIBUTIONS, *_clients_for(wanted[1])])
    manifest = _manifest(distributions)
    folder = Path(wanted[0]) / str(manifest["key"])
    _KNOWN[wanted] = folder
    if (folder / "site" / MANIFEST).is_file():
        return Bundle(folder)
    started = time.monotonic()
    _log.info("Building the runtime bundle %s in %s (once per version, reused by later deploys)", folder.name, folder)
    try:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with _aside(folder.parent, folder.name) as building:
            _build(building, distributions, manifest)
            with contextlib.suppress(FileExistsError, OSError):
                if not folder.exists():
                    building.rename(folder)  # another worker's rename may have won: its bundle is the same
    except OSError as exc:
        raise DeployError(
            f"the runtime bundle cannot be built in {folder.parent} ({exc.strerror or exc}): give "
            "AIRFLOW_ASYNC_STREAM_BUNDLES (or AIRFLOW_ASYNC_STREAM_HOME) a folder this host can write"
        ) from None
    if not (folder / "site" / MANIFEST).is_file():
        raise DeployError(f"the runtime bundle could not be built in {folder}")
    built = Bundle(folder, built_s=time.monotonic() - started)
    _log.info("Built the runtime bundle %s in %.1f s", built.key, built.built_s)
    return built


_ABOUT = "import sys, sysconfig; print(sys.implementation.name, *sys.version_info[:2], sysconfig.get_platform())"


def refuse_driver_python(python: str, where: str) -> None:
    """Refuse, before a submit, a driver Python on this host that cannot import a bundle built here (``where``
    names the setting that chose it)."""
    wanted = f"{sys.implementation.name} {sys.version_info.major}.{sys.version_info.minor} {sysconfig.get_platform()}"
    if os.path.realpath(python) == os.path.realpath(sys.executable):
        return
    try:
        answer = subprocess.run([python, "-c", _ABOUT], capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        raise DeployError(f"{where}: {python} does not run here ({exc}); name a Python on this host") from None
    name, major, minor, platform = answer.stdout.split()
    if f"{name} {major}.{minor} {platform}" != wanted:
        raise DeployError(
            f"{where}: {python} is {name} {major}.{minor} on {platform}, but the runtime shipped with the job fits "
            f"{wanted} (this host's, whose compiled parts it carries): name a Python {sys.version_info.major}."
            f"{sys.version_info.minor}"
        )


def _clients_for(protocols: Iterable[str]) -> list[str]:
    clients = []
    for protocol in protocols:
        client = _CLIENTS.get(protocol)
        if client is None or client in clients:
            continue
        try:
            importlib.metadata.distribution(client)
        except importlib.metadata.PackageNotFoundError:
            raise DeployError(
                f"a control area on {protocol}:// needs {client} in the driver, and it is not installed here to "
                f"ship with the job: pip install {client}"
            ) from None
        clients.append(client)
    return clients


def _closure(names: Iterable[str]) -> list[importlib.metadata.Distribution]:
    """``names`` and what they require on this Python (markers evaluated, no extras), each installed once."""
    found: dict[str, importlib.metadata.Distribution] = {}
    pending = list(names)
    while pending:
        name = pending.pop()
        key = name.lower().replace("_", "-")
        if key in found:
            continue
        try:
            distribution = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            raise DeployError(f"the driver needs {name}, which is not installed here to ship with the job") from None
        found[key] = distribution
        for text in distribution.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                pending.append(requirement.name)
    return sorted(found.values(), key=_name)


def _name(distribution: importlib.metadata.Distribution) -> str:
    return str(distribution.metadata["Name"]).lower().replace("_", "-")


def _package_files() -> Iterator[Path]:
    for path in sorted(_PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            yield path


def _manifest(distributions: list[importlib.metadata.Distribution]) -> dict[str, object]:
    """What the bundle holds and what it needs of the driver's Python; its key names all of it."""
    from airflow_async_stream import __version__

    digest = hashlib.sha256()
    for path in _package_files():
        digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes() + b"\0")
    versions = {_name(d): d.version for d in distributions}
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    described = {
        "provider": __version__,
        "package_sha256": digest.hexdigest(),
        "distributions": versions,
        "python": python,
        "implementation": sys.implementation.name,
        "platform": sysconfig.get_platform(),
    }
    key = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()[:16]
    return {**described, "key": f"{__version__}-py{python}-{key}"}


@contextlib.contextmanager
def _aside(parent: Path, name: str) -> Iterator[Path]:
    building = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=parent))
    building.chmod(0o755)  # mkdtemp's 0700 would keep a driver run as another user out
    try:
        yield building
    finally:
        shutil.rmtree(building, ignore_errors=True)  # left only when another worker's rename won


def _build(folder: Path, distributions: list[importlib.metadata.Distribution], manifest: dict[str, object]) -> None:
    site = folder / "site"
    shutil.copytree(_PACKAGE, site / _PACKAGE.name, ignore=_SKIPPED)
    for distribution in distributions:
        _copy_distribution(distribution, site)
    # Unchecked hashes: an archive extracted on a cluster keeps no reliable file times, and a bundle never changes.
    compileall.compile_dir(site, quiet=1, workers=0, invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH)
    (site / MANIFEST).write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    shutil.copyfile(_PACKAGE / "runtime" / "entry.py", folder / "driver.py")
    with zipfile.ZipFile(folder / "runtime.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        for path in sorted(site.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(site))


def _copy_distribution(distribution: importlib.metadata.Distribution, site: Path) -> None:
    """The distribution's installed files (its RECORD), those inside its site folder, without bytecode."""
    root = Path(str(distribution.locate_file("")))
    for file in distribution.files or []:
        source = Path(str(distribution.locate_file(file)))
        try:
            relative = source.resolve().relative_to(root.resolve())
        except ValueError:
            continue  # scripts in bin/, data files outside site-packages
        if "__pycache__" in relative.parts or relative.suffix == ".pyc" or not source.is_file():
            continue
        target = site / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
