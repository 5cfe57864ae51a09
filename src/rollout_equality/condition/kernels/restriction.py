"""Restriction to the content tokens, compiled: a block of rows and columns of each matrix, its rows renormalised
(:func:`rollout_equality.condition.dobrushin.restrict` validates and calls it)."""

from __future__ import annotations

import numba


@numba.njit(parallel=True, cache=True, nogil=True)
def restrict_rows(M, idx, out, mass):
    """out[b, r, c] = M[b, idx[r], idx[c]] / mass[b, r], mass[b, r] = Σ_c M[b, idx[r], idx[c]] summed in
    the order of idx (c = 0, 1, …), as numpy sums the fancy-indexed block of a stack of matrices.

    M: (batch, n, n) float64; idx: int64 (m,); out: (batch, m, m); mass: (batch, m). A row whose mass is
    not positive is left unwritten (the caller raises). Matrices are spread over threads."""
    m = len(idx)
    for b in numba.prange(M.shape[0]):
        for r in range(m):
            row = out[b, r]
            src = M[b, idx[r]]
            s = 0.0
            for c in range(m):
                row[c] = src[idx[c]]
                s += row[c]
            mass[b, r] = s
            if s > 0.0:
                for c in range(m):
                    row[c] = row[c] / s
