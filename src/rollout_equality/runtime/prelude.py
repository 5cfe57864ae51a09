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

The CPU code path: each library picks the fastest kernels for the processor it finds (torch's ATen kernels by
vector width, MKL's BLAS, oneDNN's JIT, numba's compiled analysis), and other kernels add in another order. ``code_path`` (a config
setting, :data:`CODE_PATHS`) fixes the choice with the libraries' own variables, read when they start, so that
another CPU runs the same kernels: ``native`` leaves the choice to each library (and to the environment);
``avx2`` the AVX2 kernels (MKL promises the same results on every Intel CPU with AVX2, and falls back to its own
choice on others); ``compatible`` the SSE kernels of every x86-64 CPU (MKL's COMPATIBLE branch promises the same
results on Intel and compatible processors). docs/outputs.md#reproducibility says what this gives, measured.
"""

from __future__ import annotations

import os
import sys

OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
CODE_PATHS = {
    "native": {},
    "avx2": {
        "ATEN_CPU_CAPABILITY": "avx2",
        "MKL_CBWR": "AVX2",
        "ONEDNN_MAX_CPU_ISA": "AVX2",
        "NUMBA_CPU_NAME": "haswell",
    },
    "compatible": {
        "ATEN_CPU_CAPABILITY": "default",
        "MKL_CBWR": "COMPATIBLE",
        "ONEDNN_MAX_CPU_ISA": "SSE41",
        "NUMBA_CPU_NAME": "generic",
    },
}
"""The CPU code paths a config may fix (``code_path``): the variables each sets (see the module)."""
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_READ_AT_IMPORT = ("numba", "huggingface_hub", "datasets")


_READ_CODE_PATH = ("torch", "numba", "rollout_equality.condition.kernels")
"""The modules that read a code path's variables when they start (torch for ATen, MKL and oneDNN; numba, and the
analysis kernels it compiles)."""


def code_path(name: str) -> None:
    """Fix the CPU code path ``name`` (:data:`CODE_PATHS`) for this process: its variables set (a variable of another
    code path that the environment set is removed), before torch and numba start. Raises RuntimeError once one of
    :data:`_READ_CODE_PATH` is imported (it has read them, and would run other kernels than the records would name),
    ValueError for an unknown name."""
    if name not in CODE_PATHS:
        raise ValueError(f"code_path must be one of {sorted(CODE_PATHS)}; got {name!r}")
    if name == "native":
        return
    loaded = [m for m in _READ_CODE_PATH if m in sys.modules]
    if loaded:
        raise RuntimeError(
            f"{', '.join(loaded)} imported before code_path {name!r} was set: set it first "
            "(rollout_equality.runtime.prelude.prelude), so that torch, MKL, oneDNN and numba read it when they start"
        )
    for variable in {v for path in CODE_PATHS.values() for v in path}:
        os.environ.pop(variable, None)
    os.environ.update(CODE_PATHS[name])


def prelude(threads: int, code_path_name: str = "native") -> None:
    """Offline hub, ``threads`` threads for torch, numba and BLAS, and the CPU code path ``code_path_name``, in this
    process (see the module)."""
    if not isinstance(threads, int) or isinstance(threads, bool) or threads < 1:
        raise ValueError(f"a job needs at least 1 thread; got {threads!r}")
    early = [m for m in _READ_AT_IMPORT if m in sys.modules]
    if early:
        raise RuntimeError(
            f"{', '.join(early)} imported before the job prelude: call rollout_equality.runtime.prelude.prelude first in the"
            " script, so that the offline and thread settings are read"
        )
    code_path(code_path_name)
    os.environ.update(OFFLINE)
    os.environ.update({name: str(threads) for name in THREAD_VARIABLES})  # torch starts with OMP_NUM_THREADS
    if "torch" in sys.modules:  # already started: its pool is set directly
        sys.modules["torch"].set_num_threads(threads)
