"""CPU code paths: which kernels the numerical libraries run, and how a config fixes the choice.

Each library picks the fastest kernels for the processor it finds: torch its ATen kernels by vector width, MKL its
BLAS branch, oneDNN its JIT, numba the target it compiles the analysis for. Other kernels add in another order, so
another processor can give other last bits from the same config. ``code_path`` (config ``extraction.code_path``,
``tabular.training.code_path``, ``supervision.code_path``; the names are the schema's, the variables
:data:`CODE_PATHS`') fixes the choice with the libraries' own variables, read once, when each library starts:

* ``native`` leaves the choice to each library (and to the environment): the fastest;
* ``avx2`` the AVX2 kernels (MKL promises the same results on every Intel CPU with AVX2, and falls back to its own
  choice on others);
* ``compatible`` the SSE kernels of every x86-64 CPU (MKL's COMPATIBLE branch promises the same results on Intel and
  compatible processors).

What each gave, measured and emulated, is in docs/outputs.md#reproducibility. This is the one statement of that
rationale; the config's schema and docs/outputs.md link here.
"""

from __future__ import annotations

import os
import sys

from rollout_equality.config.schema import choices

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
"""The variables each code path sets; its names are the schema's ``$defs.code_path`` (checked at import)."""
if tuple(CODE_PATHS) != choices("$defs", "code_path"):
    raise ImportError(
        f"CODE_PATHS names {tuple(CODE_PATHS)}, the schema {choices('$defs', 'code_path')}: make them one"
    )

VARIABLES = tuple(dict.fromkeys(variable for path in CODE_PATHS.values() for variable in path))
"""Every variable that chooses a library's CPU code path (read once, when the library starts)."""

READ_AT_START = ("torch", "numba", "rollout_equality.condition.kernels")
"""The modules that read a code path's variables when they start (torch for ATen, MKL and oneDNN; numba, and the
analysis kernels it compiles)."""


def code_path(name: str) -> None:
    """Fix the CPU code path ``name`` (:data:`CODE_PATHS`) for this process: its variables set (a variable of another
    code path that the environment set is removed), before torch and numba start. Raises RuntimeError once one of
    :data:`READ_AT_START` is imported (it has read them, and would run other kernels than the records would name),
    ValueError for an unknown name."""
    if name not in CODE_PATHS:
        raise ValueError(f"code_path must be one of {sorted(CODE_PATHS)}; got {name!r}")
    if name == "native":
        return
    loaded = [m for m in READ_AT_START if m in sys.modules]
    if loaded:
        raise RuntimeError(
            f"{', '.join(loaded)} imported before code_path {name!r} was set: set it first "
            "(rollout_equality.runtime.prelude.prelude), so that torch, MKL, oneDNN and numba read it when they start"
        )
    for variable in VARIABLES:
        os.environ.pop(variable, None)
    os.environ.update(CODE_PATHS[name])


def active() -> str:
    """The name of the code path whose variables this process's environment holds, all of them ("native" when none
    holds them all)."""
    for name, variables in CODE_PATHS.items():
        if variables and all(os.environ.get(k) == v for k, v in variables.items()):
            return name
    return "native"
