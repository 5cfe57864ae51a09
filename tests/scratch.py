"""A scratch clone of this checkout, as a newcomer gets it, for the tests that run what the documents tell them.

``git clone`` of this repository (so nothing git ignores comes along: no results/, resources/ or tiny/), with the
edits of the working tree laid over it and staged (a test run before a commit tests what is being edited), and
``.venv`` linked to the environment the tests run in (the documents call ``.venv/bin/snakemake`` and friends;
installing it again would take minutes and the package index).
"""

import os
import subprocess
import sys
from pathlib import Path

from conftest import REPO


def _git(*args: str, cwd: Path = REPO) -> bytes:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True).stdout


def scratch_clone(dest: Path) -> Path:
    """Clone this checkout into ``dest`` (which must not exist) as described above; returns ``dest``."""
    _git("clone", "--quiet", str(REPO), str(dest))
    for rel in filter(None, _git("ls-files", "-z", "--modified", "--others", "--exclude-standard").split(b"\0")):
        source, target = REPO / os.fsdecode(rel), dest / os.fsdecode(rel)
        if source.is_file():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
            target.chmod(source.stat().st_mode)
    for rel in filter(None, _git("ls-files", "-z", "--deleted").split(b"\0")):
        (dest / os.fsdecode(rel)).unlink(missing_ok=True)
    _git("add", "--all", cwd=dest)
    (dest / ".venv").symlink_to(Path(sys.prefix), target_is_directory=True)
    return dest
