"""The one-node SLURM of tests/slurm/harness.sh, started for one test module at a time.

The harness owns /etc/slurm/slurm.conf and the daemons' ports, so two test modules must never run it at once (their
pytest-xdist workers may run side by side): a lock file serialises them. tests/workflow/test_workflow.py holds it
while its runs use SLURM; a module that needs SLURM joins those tests rather than waiting for the lock. Exit
status 3 of the harness means it cannot run here (not root, no packages): :func:`one_node_slurm` yields None and the
reason, unless ROLLOUT_REQUIRE_SLURM is set (CI), where that fails.
"""

import fcntl
import os
import subprocess
from contextlib import contextmanager
from pathlib import Path

from conftest import REPO

HARNESS = REPO / "tests/slurm/harness.sh"
LOCK = Path("/tmp/rollout-equality-slurm-harness.lock")


@contextmanager
def one_node_slurm(state: Path, *, cpus: int | None = None, mem_mb: int | None = None):
    """Yield (state folder, "") with SLURM running, or (None, why it cannot run here). ``cpus``/``mem_mb``: the node
    declares at least these (more than the host may have: the harness's config_overrides)."""
    env = dict(os.environ)
    if cpus:
        env["SLURM_HARNESS_CPUS"] = str(cpus)
    if mem_mb:
        env["SLURM_HARNESS_MEM_MB"] = str(mem_mb)
    with LOCK.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        started = subprocess.run(
            ["bash", str(HARNESS), "start", str(state)], capture_output=True, text=True, timeout=900, env=env
        )
        try:
            if started.returncode == 3 and not os.environ.get("ROLLOUT_REQUIRE_SLURM"):
                yield None, started.stderr.strip()
            else:
                assert started.returncode == 0, f"the SLURM harness failed:\n{started.stdout}\n{started.stderr}"
                yield state, ""
        finally:
            if started.returncode != 3:
                subprocess.run(["bash", str(HARNESS), "stop", str(state)], timeout=120)


def make_site_profile(out: Path, *flags: str) -> Path:
    """``rollout-equality slurm-profile`` as docs/cluster.md runs it (default: partition ``debug``, no account), from
    this checkout's profiles/slurm, into ``out``; returns ``out``."""
    import sys

    flags = flags or ("--partition", "debug", "--no-account")
    made = subprocess.run(
        [sys.executable, "-m", "rollout_equality", "slurm-profile", *flags]
        + ["--base", str(REPO / "profiles/slurm/config.yaml"), "--out", str(out)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stdout + made.stderr
    return out
