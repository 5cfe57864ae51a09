"""Threads: how many each pool of a step gets, and why a config fixes some of them.

On a CPU, a reduction split over more threads adds its partial sums in another order, so a float32 result's last
bits depend on the thread count. Three kinds of work, three rules:

* **torch's forward pass** (measuring) and **FT-Transformer's training** run on the count the config fixes
  (``extraction.threads``, ``tabular.training.threads``), not on the job's cores: the same config gives the same
  bytes on any machine of a kind, whatever ``--cores`` or a cluster's ``cpus_per_task`` is (more cores than that
  count only leave some idle; fewer run the same threads, slower);
* **the analysis** (κ, the condition, rollout) runs on every thread the job has (:func:`job_threads`): its compiled
  kernels add in a fixed order and each rollout product runs on one thread (torch is held at one thread meanwhile,
  :func:`torch_threads`), so its bits do not depend on the count;
* every **pool a job starts** (torch's intra-op pool, numba's, the BLAS pools of numpy) is sized to the job's threads
  by the job prelude (:func:`rollout_equality.runtime.prelude.prelude`, through :data:`THREAD_VARIABLES`), so that
  jobs side by side do not oversubscribe the cores;
* and no pool may **choose fewer threads at run time** (:data:`FIXED_COUNT`): MKL's ``MKL_DYNAMIC`` is TRUE unless
  set (MKL "may use fewer OpenMP threads than the maximum number you specify"), and torch turns it off only when
  its thread count is set after it starts (``torch.set_num_threads``), which a training job never does; Intel names
  ``MKL_DYNAMIC=FALSE`` and ``OMP_DYNAMIC=FALSE`` among the conditions of results that repeat run to run.

This is the one statement of that rationale; the config's schema, the rules and docs/outputs.md link here.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
"""The variables each thread pool reads when it starts (torch starts its intra-op pool with ``OMP_NUM_THREADS``)."""
FIXED_COUNT = {"MKL_DYNAMIC": "FALSE", "OMP_DYNAMIC": "FALSE"}
"""The variables that keep MKL and OpenMP on the thread count they were given (see the module)."""


def job_threads() -> int:
    """The threads this job may use: the count the job prelude gave torch (``OMP_NUM_THREADS``), else the CPUs."""
    try:
        return max(1, int(os.environ["OMP_NUM_THREADS"]))
    except (KeyError, ValueError):
        return os.cpu_count() or 1


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` within the block, restored after it."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)
