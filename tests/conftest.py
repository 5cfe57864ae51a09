import json
import os
import shutil
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


# The modules that run the workflow end to end (minutes each), first in the collection: pytest-xdist hands modules
# to its workers in collection order (pyproject.toml's addopts: `--dist loadscope --no-loadscope-reorder`), so each
# of them starts on a worker while the other works through them or the quicker modules beside it.
FIRST = ("test_workflow.py", "test_commands.py", "test_rehearsal.py")


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(FIRST)))  # stable: each module's own order is kept


def shared_folder(tmp_path_factory) -> Path:
    """A folder of this test session that every pytest-xdist worker sees (each worker's own temporary folder lies
    in it), or the session's temporary folder when the tests run in one process."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def quick_start_run(tmp_path_factory) -> TinyRun:
    """README's Quick start tiny run, as written, once per test session in a scratch clone: the offline suite and the
    dynamics study of the tiny configuration on 2 cores. tests/repository/test_commands.py checks it as the documented command;
    tests/workflow/test_workflow.py reads its outputs (and reruns targets in it) as its 2-core run.

    Once for all workers too: the first to ask runs it under a file lock and saves its result beside the clone; a
    worker asking meanwhile waits for the lock and reads that result (pytest-xdist's own recipe for a session
    fixture made once)."""
    from documented import quick_start_tiny_command
    from filelock import FileLock
    from scratch import scratch_clone

    from rollout_equality.runtime.files import write_json

    shared = shared_folder(tmp_path_factory)
    clone, saved = shared / "quick_start" / "clone", shared / "quick_start" / "result.json"
    with FileLock(shared / "quick_start.lock"):
        if not saved.exists():
            shutil.rmtree(clone.parent, ignore_errors=True)  # a worker that failed before the run left a clone
            scratch_clone(clone)
            env = {
                **os.environ,
                "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
                "VIRTUAL_ENV": str(clone / ".venv"),
                "HF_HUB_OFFLINE": "1",
                "SOURCE_DATE_EPOCH": "0",
                "ROLLOUT_EQUALITY_CACHE": str(clone.parent / "cli-cache"),
            }
            command = ["bash", "-c", quick_start_tiny_command()]
            start = time.monotonic()
            res = subprocess.run(command, cwd=clone, env=env, capture_output=True, text=True, timeout=1800)
            seconds = time.monotonic() - start
            result = {"args": command, "returncode": res.returncode, "stdout": res.stdout, "stderr": res.stderr}
            write_json(saved, {**result, "seconds": seconds})  # atomically: a reader never sees half of it
        result = json.loads(saved.read_text())
    seconds = result.pop("seconds")
    return TinyRun(clone, clone / "tiny", subprocess.CompletedProcess(**result), seconds)


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
