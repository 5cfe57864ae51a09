"""The prelude of every compute job (each rule but the ``localrules:``, which download on the submitting host).

Compute jobs never reach the network: models, data sets and tables were fetched by the local rules, so the
Hugging Face hub and datasets libraries run offline (a missing file then fails in seconds, naming itself,
instead of retrying a hub that a compute node cannot reach). And every thread pool a job uses is sized to the
``threads`` it is given: torch's intra-op pool (it starts with ``OMP_NUM_THREADS``), numba's, and the BLAS pools of numpy.

Call :func:`prelude` first thing in a workflow script, before anything imports numba, huggingface_hub or
datasets (they read these variables once, at import): ``prelude(snakemake.threads)``. Where the result's bits
depend on the thread count (FT-Transformer training and measurement: the order of a product's partial sums),
the script passes the count the config fixes (``tabular.training.threads``) instead of the job's, so that the
same config gives the same bytes on any machine, whatever ``--cores`` or a cluster's ``cpus_per_task`` is.
"""

from __future__ import annotations

import os
import sys

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_READ_AT_IMPORT = ("numba", "huggingface_hub", "datasets")


def prelude(threads: int) -> None:
    """Offline hub and ``threads`` threads for torch, numba and BLAS, in this process (see the module)."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"a job needs at least 1 thread; got {threads!r}")
    early = [m for m in _READ_AT_IMPORT if m in sys.modules]
    if early:
        raise RuntimeError(
            f"{', '.join(early)} imported before the job prelude: call rollout_equality.job.prelude first in the"
            " script, so that the offline and thread settings are read"
        )
    os.environ.update(OFFLINE)
    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})  # torch starts with OMP_NUM_THREADS
    if "torch" in sys.modules:  # already started: its pool is set directly
        sys.modules["torch"].set_num_threads(threads)
