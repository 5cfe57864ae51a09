"""Serve replica repositories with olah (a self-hosted Hugging Face mirror) in offline mode.

olah's ``mirrors-path`` holds ``models/<org>/<repo>`` and ``datasets/<org>/<repo>``, each a git
repository with a branch ``main``; with ``[accessibility] offline = true`` it answers from them
alone. Facts that shape the clients' calls: offline, olah answers only requests that name a
revision (``/api/models/x/revision/main``; a bare ``/api/models/x`` answers 401), resolves
commits and ``main`` (not refs such as ``refs/convert/parquet``), and resets the connection for
a repository it does not hold.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator


def olah_cli() -> str:
    """The ``olah-cli`` executable beside this Python (the test extra installs olah), else on PATH."""
    beside = Path(sys.executable).parent / "olah-cli"
    found = str(beside) if beside.exists() else shutil.which("olah-cli")
    if not found:
        raise FileNotFoundError("olah-cli is not installed: `pip install -e '.[test]'` installs olah")
    return found


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve(
    mirror_root: str | os.PathLike,
    state_dir: str | os.PathLike,
    probe: str = "models/facebook/dinov2-small",
    timeout: float = 60.0,
) -> Iterator[str]:
    """Run olah on a free loopback port over ``mirror_root``; yield its endpoint (for ``HF_ENDPOINT``).

    ``state_dir`` receives olah's configuration, its own repository cache and its log
    (``olah.log``). ``probe`` names a replica asked for until olah answers.
    """
    state = Path(state_dir)
    state.mkdir(parents=True, exist_ok=True)
    port = _free_port()
    (state / "configs.toml").write_text(
        "[basic]\n"
        'host = "127.0.0.1"\n'
        f"port = {port}\n"
        f'repos-path = "{state / "repos"}"\n'
        f'mirrors-path = ["{Path(mirror_root).resolve()}"]\n'
        "[accessibility]\n"
        "offline = true\n"
    )
    endpoint = f"http://127.0.0.1:{port}"
    log = open(state / "olah.log", "w")
    proc = subprocess.Popen(
        [olah_cli(), "-c", str(state / "configs.toml")], cwd=state, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        deadline = time.monotonic() + timeout
        kind, _, repo = probe.partition("/")
        url = f"{endpoint}/api/{kind}/{repo}/revision/main"
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as answer:
                    if answer.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"olah did not answer {url} (exit {proc.poll()}); see {state / 'olah.log'}")
            time.sleep(0.5)
        yield endpoint
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
