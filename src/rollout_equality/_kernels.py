"""Compiled CPU kernels of the condition test (numba).

The hot path of the whole project: every condition test computes the pairwise
total-variation (TV) distances between the rows of A and of ½(I+A), an O(n³)
computation per matrix, then a few O(n²) reductions. numba compiles loops that
read each row pair once, vectorise the inner sum, spread rows over threads and
keep each matrix's work in cache. Each pair's sum is computed by one thread in
a fixed order, so results do not depend on the number of threads.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(fastmath=True, inline="always", cache=True)
def _row_tv(A, out, i):
    n = A.shape[0]
    for j in range(i + 1, n):
        s = 0.0
        for k in range(n):
            s += abs(A[i, k] - A[j, k])
        out[i, j] = 0.5 * s


@numba.njit(parallel=True, fastmath=True, cache=True)
def _upper_tv_kernel(A, out):
    # Row i costs n - 1 - i pair sums; pairing row t with row n-1-t gives every
    # work item the same cost, so the static schedule of prange stays balanced.
    n = A.shape[0]
    half = (n + 1) // 2
    for t in numba.prange(half):
        _row_tv(A, out, t)
        if n - 1 - t != t:
            _row_tv(A, out, n - 1 - t)


def upper_tv(A: np.ndarray) -> np.ndarray:
    """TV distances ½‖A_i· − A_j·‖₁ for i < j of one float64 (n, n) matrix.

    Returns an (n, n) array holding them in its strict upper triangle, zeros elsewhere.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    out = np.zeros(A.shape, dtype=np.float64)
    _upper_tv_kernel(A, out)
    return out


@numba.njit(cache=True)
def condition_from_tv(A, tv_a, tv_b, atol):
    """Reduce the TV matrices of A and B = ½(I+A) to the condition's numbers.

    A: (n, n) float64; tv_a, tv_b: TV distances of A's and B's rows, read from
    the strict upper triangle. Returns (κ(A), κ(B), number of pairs i < j with
    TV_ij ≥ κ(A) − atol, witness i, witness j). The witness is the pair of
    smallest defect δ_ij = (κ − TV_ij) + (A_ji − A_ii)₊ + (A_ij − A_jj)₊ (first
    in row-major order on ties) when that defect is at most 2·atol, else (-1, -1).
    """
    n = A.shape[0]
    kappa_a = 0.0
    kappa_b = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            if tv_a[i, j] > kappa_a:
                kappa_a = tv_a[i, j]
            if tv_b[i, j] > kappa_b:
                kappa_b = tv_b[i, j]
    n_max = 0
    best = np.inf
    wi = -1
    wj = -1
    for i in range(n):
        for j in range(i + 1, n):
            gap = kappa_a - tv_a[i, j]
            if gap <= atol:
                n_max += 1
            defect = gap + max(A[j, i] - A[i, i], 0.0) + max(A[i, j] - A[j, j], 0.0)
            if defect < best:
                best = defect
                wi = i
                wj = j
    if not best <= 2.0 * atol:
        wi = -1
        wj = -1
    return kappa_a, kappa_b, n_max, wi, wj
