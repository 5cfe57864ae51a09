"""The compiled CPU kernels of the condition test (numba), by idea:

* :mod:`.sweep` — the TV of every pair of rows, in float64 (the reference) or float32, in units of four rows;
* :mod:`.screen` — the float32 screen: its error bound, and the float64 re-check of the pairs that can matter;
* :mod:`.batch` — the whole condition test (or κ alone) of a batch in one call, with either engine;
* :mod:`.restriction` — the content block of each matrix, its rows renormalised.

Here: the kernels :mod:`rollout_equality.condition.dobrushin` calls, each with its serial twin.
"""

from __future__ import annotations

import types

import numba

from rollout_equality.condition.kernels.batch import (
    Outputs,
    Settings,
    Workspace,
    analyse_batch,
    half_identity_batch,
    workspace,
)
from rollout_equality.condition.kernels.restriction import restrict_rows
from rollout_equality.condition.kernels.screen import screen_bound
from rollout_equality.condition.kernels.sweep import upper_tv

__all__ = [
    "Outputs",
    "Settings",
    "Workspace",
    "analyse_batch",
    "analyse_batch_serial",
    "half_identity_batch",
    "half_identity_batch_serial",
    "restrict_rows",
    "restrict_rows_serial",
    "screen_bound",
    "upper_tv",
    "workspace",
]


def serial_twin(kernel):
    """``kernel`` compiled again without ``parallel=True``: its ``prange`` loops run as plain loops on the
    calling thread, with the same per-pair arithmetic (the results are the same bit for bit; each pair's sum is
    computed in a fixed order either way). For work spread over threads by the caller, one task per thread
    (``Engine(serial=True)`` of :mod:`rollout_equality.condition.dobrushin`): no OpenMP team is woken, and concurrent calls
    are safe with every numba threading layer. The twin has its own name, so numba caches it apart."""
    f = kernel.py_func
    name = f"{f.__name__}_serial"
    twin = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    twin.__qualname__ = name
    twin.__doc__ = f"As :func:`{f.__name__}`, on the calling thread alone."
    return numba.njit(cache=True, nogil=True)(twin)


analyse_batch_serial = serial_twin(analyse_batch)
half_identity_batch_serial = serial_twin(half_identity_batch)
restrict_rows_serial = serial_twin(restrict_rows)
