"""A direct numpy transcription of the definitions, for tests and benchmarks.

Naive on purpose: it materialises every difference A_ik − A_jk as an (n, n, n)
array, so it needs 8·n³ bytes per matrix (n = 1370: 20 GB). The fast path is
:func:`rollout_equality.condition.dobrushin.equality_condition`; both must agree.
"""

from __future__ import annotations

import numpy as np


def naive_tv(A: np.ndarray) -> np.ndarray:
    """TV matrix of one (n, n) matrix by broadcasting: ½ Σ_k |A_ik − A_jk|."""
    return 0.5 * np.abs(A[:, None, :] - A[None, :, :]).sum(axis=-1)


def naive_condition(A: np.ndarray, atol: float) -> dict:
    """The condition test on one (n, n) matrix, written straight from the definitions."""
    A = np.asarray(A, dtype=np.float64)
    n = A.shape[0]
    tv = naive_tv(A)
    kappa = tv.max()
    B = 0.5 * (np.eye(n) + A)
    kappa_half = naive_tv(B).max()
    i, j = np.triu_indices(n, k=1)
    attains = tv[i, j] >= kappa - atol
    defect = (kappa - tv[i, j]) + np.maximum(A[j, i] - A[i, i], 0) + np.maximum(A[i, j] - A[j, j], 0)
    bound = 0.5 * (1 + kappa)
    return {
        "holds": bool((defect <= 2 * atol).any()),
        "holds_direct": bool(abs(bound - kappa_half) <= atol),
        "kappa": float(kappa),
        "kappa_half": float(kappa_half),
        "bound": float(bound),
        "n_max_pairs": int(attains.sum()),
    }
