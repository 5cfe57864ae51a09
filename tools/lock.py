"""``python -m tools.lock``: regenerate requirements/lock.txt and the list of the files its hashes stand for.

1. runs :data:`UV_COMMAND` (uv :data:`UV_VERSION`, ``pip install uv==0.13.9``), the command the lock's header names:
   a universal resolution, with hashes, for the environments of ``[tool.uv] environments`` in pyproject.toml
   (CPython 3.11 to 3.13 on Linux x86-64, Linux aarch64 and macOS arm64). uv keeps the versions the lock already
   pins (the existing lock is its preference) unless an input asks for another or ``--upgrade-package NAME`` is
   passed on (any further arguments are given to uv);
2. reads the package index's simple API (PEP 691, JSON) for every pin and writes :data:`FILES`: the file name of
   every hash of the lock, so that tests/runtime/test_lock.py can tell offline which platforms each pin has a wheel
   for, and which ones install from its sdist. A hash the index does not list stops it, and nothing is written.

Run it from the repository's root where the index is reachable; it needs no project environment.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LOCK = REPO / "requirements/lock.txt"
FILES = REPO / "requirements/lock-files.txt"
"""``<sha256> <file name>`` of every hash in the lock, one a line, sorted by file name (written by :func:`main`)."""
UV_VERSION = "0.13.9"
UV_COMMAND = (
    "uv pip compile pyproject.toml requirements/lock.in --extra test --extra slurm --universal --python-version 3.11 "
    "--generate-hashes -o requirements/lock.txt"
)
"""The command the lock's header names (uv writes it there)."""
INDEX = os.environ.get("UV_INDEX_URL", "https://pypi.org/simple").rstrip("/")

_BLOCK = re.compile(r"^([A-Za-z0-9][A-Za-z0-9_.-]*)==([^\s;\\]+)(.*?)(?=^[A-Za-z0-9#]|\Z)", re.M | re.S)


def pinned_hashes(lock_text: str) -> dict[tuple[str, str], list[str]]:
    """{(name, version): [sha256, ...]} of a lock made by uv with --generate-hashes."""
    return {
        (name, version): re.findall(r"--hash=sha256:([0-9a-f]{64})", rest)
        for name, version, rest in _BLOCK.findall(lock_text)
    }


def index_files(name: str) -> dict[str, str]:
    """{sha256: file name} of every file of project ``name`` on the index (its simple API, JSON form)."""
    request = urllib.request.Request(
        f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json", "User-Agent": "tools.lock"}
    )
    with urllib.request.urlopen(request, timeout=120) as response:
        page = json.load(response)
    return {f["hashes"]["sha256"]: f["filename"] for f in page["files"] if "sha256" in f.get("hashes", {})}


def file_list(lock_text: str) -> list[str]:
    """``<sha256> <file name>`` of every hash of the lock; raises SystemExit naming a hash the index lacks."""
    lines, unknown = [], []
    pins = pinned_hashes(lock_text)
    for k, ((name, version), hashes) in enumerate(sorted(pins.items())):
        print(f"[{k + 1}/{len(pins)}] {name}=={version}: {len(hashes)} files", file=sys.stderr)
        files = index_files(name)
        for sha in hashes:
            if sha in files:
                lines.append(f"{sha} {files[sha]}")
            else:
                unknown.append(f"{name}=={version} sha256:{sha}")
    if unknown:
        raise SystemExit(f"tools.lock: the index {INDEX} lists no file with these hashes: {', '.join(unknown)}")
    return sorted(lines, key=lambda line: (line.split(" ", 1)[1], line))


def main(argv: list[str]) -> int:
    try:
        version = subprocess.run(["uv", "--version"], capture_output=True, text=True, check=True).stdout.split()[1]
    except (OSError, subprocess.CalledProcessError) as err:
        raise SystemExit(f"tools.lock: uv not found ({err}); pip install uv=={UV_VERSION}") from err
    if version != UV_VERSION:
        raise SystemExit(
            f"tools.lock: uv {version} found, the lock is made by uv {UV_VERSION}: pip install uv=={UV_VERSION}"
        )
    command = UV_COMMAND.split() + argv
    print(f"tools.lock: {' '.join(command)}", file=sys.stderr)
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)  # uv prints the lock too
    lines = file_list(LOCK.read_text())
    header = (
        f"# The file of every hash in requirements/lock.txt, as {INDEX} lists it: `<sha256> <file name>`, sorted by\n"
        "# file name. Written by `python -m tools.lock` with the lock; tests/runtime/test_lock.py reads it.\n"
    )
    fd, tmp = tempfile.mkstemp(dir=FILES.parent, prefix=".lock-files.")
    with os.fdopen(fd, "w") as fh:
        fh.write(header + "\n".join(lines) + "\n")
    os.replace(tmp, FILES)
    print(f"tools.lock: {LOCK.name}, {len(lines)} files in {FILES.name}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
