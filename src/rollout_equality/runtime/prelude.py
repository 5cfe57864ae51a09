"""The prelude of every compute job (each rule but the ``localrules:``, which download on the submitting host).

Compute jobs never reach the network: models, data sets and tables were fetched by the local rules, so the
Hugging Face hub and datasets libraries run offline (a missing file then fails in seconds, naming itself,
instead of retrying a hub that a compute node cannot reach). Every thread pool a job uses is sized to the
``threads`` it is given (:mod:`rollout_equality.runtime.threads` says why, and which counts the config fixes
instead), and the CPU code path is fixed before a library reads it (:mod:`rollout_equality.runtime.code_paths`).

Call :func:`prelude` first thing in a workflow script, before anything imports numba, huggingface_hub or
datasets (they read these variables once, at import): ``prelude(snakemake.threads)``.

Every workflow script, local rules included, also exits without the garbage collector's last sweep
(:func:`exit_without_final_sweep`, called by ``workflow/scripts/_checkout.py``, which each imports first).
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

from rollout_equality.runtime.code_paths import code_path
from rollout_equality.runtime.threads import FIXED_COUNT, THREAD_VARIABLES

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
_READ_AT_IMPORT = ("numba", "huggingface_hub", "datasets")


def prelude(threads: int, code_path_name: str | None = None) -> None:
    """Offline hub, ``threads`` threads for torch, numba and BLAS (none of them free to choose fewer at run time),
    and the CPU code path ``code_path_name`` (None: the libraries choose, as ``native``), in this process (see the
    module)."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"a job needs at least 1 thread; got {threads!r}")
    early = [m for m in _READ_AT_IMPORT if m in sys.modules]
    if early:
        raise RuntimeError(
            f"{', '.join(early)} imported before the job prelude: call rollout_equality.runtime.prelude.prelude first "
            "in the script, so that the offline and thread settings are read"
        )
    if code_path_name is not None:
        code_path(code_path_name)
    os.environ.update(OFFLINE)
    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})  # torch starts with OMP_NUM_THREADS
    os.environ.update(FIXED_COUNT)  # and MKL keeps them, whatever the load
    if "torch" in sys.modules:  # already started: its pool is set directly
        sys.modules["torch"].set_num_threads(threads)


def exit_without_final_sweep() -> None:
    """At this process's exit, freeze what the garbage collector tracks (:func:`gc.freeze`, in an atexit hook), so
    that Python's shutdown does not sweep the object graphs of torch, transformers and a loaded model once more.

    The sweep only frees memory that the ending process returns anyway; it took 1.5-1.9 s of a job that had
    built a DINOv2-S (0.3 s without it) and 0.6 s after ``import torch`` alone (0.2 s), measured on the 2-core
    Intel Xeon: about 1.5 s of every measure job, run one after another. What a job must leave behind is
    unaffected: its outputs are written and closed (atomically) before it returns, and the atexit hooks run as
    before (logging's flushes and closes its handlers; weakref finalisers run). Only objects left in reference
    cycles at exit are not finalised, as a hard exit would leave them."""
    atexit.register(gc.freeze)
