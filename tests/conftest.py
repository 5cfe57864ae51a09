import os
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

# Tests never reach a model hub; loading code must fail fast instead of retrying.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

REPO = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class TinyRun:
    clone: Path  # the scratch clone the command ran in
    workdir: Path  # its run folder (`tiny/`)
    result: subprocess.CompletedProcess
    seconds: float


@pytest.fixture(scope="session")
def quick_start_run(tmp_path_factory) -> TinyRun:
    """README's Quick start tiny run, as written, once per test session in a scratch clone: the offline suite and the
    dynamics study of the tiny configuration on 2 cores. tests/test_commands.py checks it as the documented command;
    tests/test_workflow.py reads its outputs (and reruns targets in it) as its 2-core run."""
    from documented import quick_start_tiny_command
    from scratch import scratch_clone

    clone = scratch_clone(tmp_path_factory.mktemp("quick_start") / "clone")
    env = {
        **os.environ,
        "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(clone / ".venv"),
        "HF_HUB_OFFLINE": "1",
        "SOURCE_DATE_EPOCH": "0",
        "ROLLOUT_EQUALITY_CACHE": str(clone.parent / "cli-cache"),
    }
    start = time.monotonic()
    res = subprocess.run(
        ["bash", "-c", quick_start_tiny_command()], cwd=clone, env=env, capture_output=True, text=True, timeout=1800
    )
    return TinyRun(clone, clone / "tiny", res, time.monotonic() - start)


@pytest.fixture
def host_lookups(monkeypatch) -> list[str]:
    """The host names this process resolves while the test runs (each network attempt of a client resolves its host
    first): what "fails fast" is counted by, instead of a wall-clock bound that a loaded machine can break."""
    seen: list[str] = []
    resolve = socket.getaddrinfo

    def counted(host, *args, **kwargs):
        seen.append(host)
        return resolve(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", counted)
    return seen
