"""The locked environment: what ``requirements/lock.txt`` pins, what is installed, and how the two differ.

The lock (made by ``uv pip compile … --universal --generate-hashes``, the command in its header) pins every
distribution at one version, each with the marker of the environments it serves (CPython 3.11 to 3.13 on Linux x86-64
and aarch64 and macOS arm64; the CUDA libraries on Linux only); README's install puts exactly these into a fresh ``.venv``, with the data wheels of
``requirements/offline-data.txt`` and the project itself. :func:`differences` says where an installed environment
departs from that, and :func:`lock_digest` names a lock in a kept run (``docs/offline/environment.json``), in the
fingerprint (``benchmarks/fingerprint.py``) and in ``rollout-equality --version`` (:func:`checkout_lock`).
"""

from __future__ import annotations

import importlib.metadata as md
import re
from pathlib import Path

from rollout_equality.runtime import digests

PROJECT = "rollout-equality"
VENV_SEED = {"pip"}
"""What ``python -m venv`` seeds an environment with that no lock pins (setuptools is pinned: the build backend)."""


def canonicalize_name(name: str) -> str:
    """A distribution's name as PyPI compares names (PEP 503): lower case, runs of ``-_.`` as one ``-``."""
    return re.sub(r"[-_.]+", "-", name).lower()


_PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)==([^\s;\\]+)[ \t]*(?:;([^\\\n]*))?", re.M)


def read_pins(path: str | Path, here: bool = False) -> dict[str, str]:
    """{distribution (canonical name): version} of a requirements file pinned with ``==`` (a lock, the data
    wheels): every pin, whatever its environment marker, or with ``here`` only those whose marker holds for this
    interpreter and platform (what README's install puts here). Raises ValueError naming the file when it pins
    nothing."""
    found = _PIN.findall(Path(path).read_text())
    if here:
        from packaging.markers import Marker

        found = [
            (name, version, marker)
            for name, version, marker in found
            if not marker.strip() or Marker(marker.strip()).evaluate()
        ]
    pins = {canonicalize_name(name): version for name, version, _ in found}
    if not pins:
        raise ValueError(f"{path}: no `name==version` line; is it a requirements file made by `uv pip compile`?")
    return pins


def installed() -> dict[str, str]:
    """{distribution (canonical name): version} of every distribution installed in this interpreter's environment."""
    return {canonicalize_name(d.metadata["Name"]): d.version for d in md.distributions()}


def lock_digest(path: str | Path) -> str:
    """The SHA-256 of a lock file's pins (``name==version`` lines, sorted; its comments and hashes left out, so
    that regenerating an unchanged lock with another uv keeps the digest): ``sha256:<hex>``."""
    lines = sorted(f"{name}=={version}" for name, version in read_pins(path).items())
    return digests.labelled(digests.of_bytes("\n".join(lines).encode()))


def checkout_lock() -> Path | None:
    """``requirements/lock.txt`` of the checkout this package is imported from (the folder above ``src/`` that holds
    the project's ``pyproject.toml``), or None where the package is installed elsewhere (a wheel: no lock beside
    it). What ``rollout-equality --version`` names."""
    root = Path(__file__).resolve().parents[3]
    lock = root / "requirements" / "lock.txt"
    pyproject = root / "pyproject.toml"
    if lock.is_file() and pyproject.is_file() and f'name = "{PROJECT}"' in pyproject.read_text():
        return lock
    return None


def differences(lock: dict[str, str], also: dict[str, str], found: dict[str, str] | None = None) -> list[str]:
    """Where the installed distributions (``found``, default :func:`installed`) depart from ``lock`` plus ``also``
    (the data wheels): one line per distribution missing, at another version, or installed but pinned by neither
    (the project itself and pip excepted). Empty: the environment is the lock."""
    found = installed() if found is None else found
    wanted = {**lock, **also}
    out = []
    for name in sorted(wanted.keys() | found.keys()):
        if name == PROJECT or (name in VENV_SEED and name not in wanted):
            continue
        if name not in found:
            out.append(f"{name}: missing (locked {wanted[name]})")
        elif name not in wanted:
            out.append(f"{name} {found[name]}: installed but not locked")
        elif found[name] != wanted[name]:
            out.append(f"{name}: {found[name]} installed, {wanted[name]} locked")
    return out
