r"""Head fusions: the matrices that attention-rollout tools form from every head's attention of a layer.

The paper tests the condition on each layer's **head-averaged** attention (mean fusion). The other fusions:

* ``mean``: the average over heads, Σ_h A_h / H: the paper's matrix (its rows already sum to 1); its records are
  the head-averaged records and rollout files themselves;
* ``max``: the entrywise maximum over heads, each row divided by its sum;
* ``min``: the entrywise minimum over heads, each row divided by its sum.

vit-explain's ``head_fusion`` ("mean", "max", "min") forms the same three matrices before its rollout, without
renormalising them; its ``discard_ratio`` and its rollout's normalisation are set beside this module's in
docs/your-model.md. The condition is defined for row-stochastic matrices, so each fused matrix is renormalised to
rows summing to 1 (:func:`fuse`). :mod:`rollout_equality.condition.analysis` tests the condition on them, as on every
head's own attention and on the head average.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rollout_equality.condition.dobrushin import DEFAULT_ROW_SUM_ATOL, check_stochastic
from rollout_equality.config.settings import FUSIONS

REDUCTIONS = {"mean": np.mean, "max": np.max, "min": np.min}
"""Each fusion's entrywise reduction over the heads; its names are :data:`rollout_equality.config.settings.FUSIONS`
(checked at import)."""
if tuple(REDUCTIONS) != FUSIONS:
    raise ImportError(f"REDUCTIONS names {tuple(REDUCTIONS)}, the schema's fusions {FUSIONS}: make them one")


def fuse(heads: Any, fusion: str, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL) -> np.ndarray:
    """The fused matrix of every head's attention, each row renormalised to sum to 1.

    heads: (..., H, n, n) row-stochastic (each head's attention). fusion: a name of :data:`REDUCTIONS` (a
    :class:`rollout_equality.config.settings.HeadSettings` holds only those; another raises KeyError).
    Returns float64 (..., n, n), row-stochastic. Raises ValueError when a fused row has no mass (``min``: every
    entry of the row is 0 in some head), naming the row.
    """
    A = check_stochastic(heads, row_sum_atol, name="heads")
    if A.ndim < 3:
        raise ValueError(f"heads must have shape (..., H, n, n); got {A.shape}")
    return _fuse_checked(A, fusion)


def _fuse_checked(A: np.ndarray, fusion: str) -> np.ndarray:
    """:func:`fuse` of heads ``A`` (float64 (..., H, n, n)) that :func:`check_stochastic` has already accepted."""
    fused = REDUCTIONS[fusion](A, axis=-3)
    mass = fused.sum(axis=-1, keepdims=True)
    empty = mass[..., 0] <= 0
    if empty.any():
        pos = tuple(int(p) for p in np.argwhere(empty)[0])
        raise ValueError(
            f"the {fusion} fusion of the heads has an all-zero row {pos[-1]}"
            f"{f' of matrix {pos[:-1]}' if len(pos) > 1 else ''}: every entry of that row is 0 in some head, so "
            "it cannot be renormalised to a stochastic row"
        )
    return fused / mass
