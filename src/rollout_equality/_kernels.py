"""Compiled CPU kernels of the condition test (numba).

The hot path of the whole project: every condition test computes the pairwise
total-variation (TV) distances between the rows of A and of ½(I+A), an O(n³)
computation per matrix (one sweep serves both: :func:`upper_tv_pair`), then a
few O(n²) reductions. numba compiles loops that
read each row pair once, vectorise the inner sum, spread rows over threads and
keep each matrix's work in cache. Each pair's sum is computed by one thread in
a fixed order, so results do not depend on the number of threads. The kernels
release the GIL, so a worker thread can analyse while the network runs.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(fastmath=True, inline="always", cache=True)
def _pair_tv(A, out, i, j):
    n = A.shape[1]
    s = 0.0
    for k in range(n):
        s += abs(A[i, k] - A[j, k])
    out[i, j] = 0.5 * s


@numba.njit(fastmath=True, inline="always", cache=True)
def _block_tv(A, out, i0):
    """TV of rows i0..i0+3 against every later row.

    Pairs go in 4 × 4 tiles: each loaded element serves four pairs, so the loop
    is bound by arithmetic rather than by reading rows from cache (1.3-1.6×
    faster than one pair at a time at n = 257 and 1370).
    """
    n = A.shape[0]
    i1 = min(i0 + 4, n)
    for i in range(i0, i1):
        for j in range(i + 1, i1):
            _pair_tv(A, out, i, j)
    if i1 - i0 < 4:  # the last, partial block has no later rows
        return
    r0, r1, r2, r3 = A[i0], A[i0 + 1], A[i0 + 2], A[i0 + 3]
    j = i1
    while j + 3 < n:
        b0, b1, b2, b3 = A[j], A[j + 1], A[j + 2], A[j + 3]
        s00 = s01 = s02 = s03 = 0.0
        s10 = s11 = s12 = s13 = 0.0
        s20 = s21 = s22 = s23 = 0.0
        s30 = s31 = s32 = s33 = 0.0
        for k in range(n):
            x0, x1, x2, x3 = r0[k], r1[k], r2[k], r3[k]
            y0, y1, y2, y3 = b0[k], b1[k], b2[k], b3[k]
            s00 += abs(x0 - y0)
            s01 += abs(x0 - y1)
            s02 += abs(x0 - y2)
            s03 += abs(x0 - y3)
            s10 += abs(x1 - y0)
            s11 += abs(x1 - y1)
            s12 += abs(x1 - y2)
            s13 += abs(x1 - y3)
            s20 += abs(x2 - y0)
            s21 += abs(x2 - y1)
            s22 += abs(x2 - y2)
            s23 += abs(x2 - y3)
            s30 += abs(x3 - y0)
            s31 += abs(x3 - y1)
            s32 += abs(x3 - y2)
            s33 += abs(x3 - y3)
        out[i0, j] = 0.5 * s00
        out[i0, j + 1] = 0.5 * s01
        out[i0, j + 2] = 0.5 * s02
        out[i0, j + 3] = 0.5 * s03
        out[i0 + 1, j] = 0.5 * s10
        out[i0 + 1, j + 1] = 0.5 * s11
        out[i0 + 1, j + 2] = 0.5 * s12
        out[i0 + 1, j + 3] = 0.5 * s13
        out[i0 + 2, j] = 0.5 * s20
        out[i0 + 2, j + 1] = 0.5 * s21
        out[i0 + 2, j + 2] = 0.5 * s22
        out[i0 + 2, j + 3] = 0.5 * s23
        out[i0 + 3, j] = 0.5 * s30
        out[i0 + 3, j + 1] = 0.5 * s31
        out[i0 + 3, j + 2] = 0.5 * s32
        out[i0 + 3, j + 3] = 0.5 * s33
        j += 4
    for jj in range(j, n):
        for i in range(i0, i1):
            _pair_tv(A, out, i, jj)


@numba.njit(parallel=True, fastmath=True, cache=True, nogil=True)
def _upper_tv_kernel(A, out):
    # Block b (rows 4b..4b+3) costs about n - 4b; pairing block t with the last
    # but t gives every work item the same cost, so prange's static schedule
    # stays balanced.
    n_blocks = (A.shape[0] + 3) // 4
    half = (n_blocks + 1) // 2
    for t in numba.prange(half):
        _block_tv(A, out, 4 * t)
        if n_blocks - 1 - t != t:
            _block_tv(A, out, 4 * (n_blocks - 1 - t))


def upper_tv(A: np.ndarray) -> np.ndarray:
    """TV distances ½‖A_i· − A_j·‖₁ for i < j of one float64 (n, n) matrix.

    Returns an (n, n) array holding them in its strict upper triangle, zeros elsewhere.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    out = np.zeros(A.shape, dtype=np.float64)
    _upper_tv_kernel(A, out)
    return out


@numba.njit(inline="always", cache=True)
def _tv_half(A, B, tv_a_ij, i, j):
    """TV of rows i, j of B = ½(I + A), given TV^A_ij from the sweep over A."""
    # Σ_k |A_ik − A_jk| over k ∉ {i, j}: the sweep's sum less its two diagonal terms
    off = 2.0 * tv_a_ij - abs(A[i, i] - A[j, i]) - abs(A[i, j] - A[j, j])
    # B's off-diagonal entries are ½A's (exactly, in floating point too); its two
    # diagonal terms are read from B itself
    return 0.5 * (0.5 * off + abs(B[i, i] - B[j, i]) + abs(B[i, j] - B[j, j]))


@numba.njit(cache=True, nogil=True)
def _half_tv_kernel(A, B, tv_a, out):
    n = A.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            out[i, j] = _tv_half(A, B, tv_a[i, j], i, j)


def upper_tv_pair(A: np.ndarray, B: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """TV distances of the rows of A and of B = ½(I + A), from one O(n³) sweep.

    A, B: float64 (n, n), B the matrix ½(I + A) built by the caller. Row i of B is
    ½A_i· off the diagonal, so for a pair i < j the two TV sums share every term
    but k ∈ {i, j}: the sweep over A (:func:`upper_tv`) gives TV^A_ij, and TV^B_ij
    is its sum without those two terms, halved, plus |B_ii − B_ji| + |B_ij − B_jj|
    read from B's entries (O(n²)). This is the definition of TV^B evaluated term
    by term, not the characterisation it is checked against (which needs no B).
    Returns (tv_a, tv_b), each (n, n) with the distances in its strict upper triangle.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    B = np.ascontiguousarray(B, dtype=np.float64)
    if B.shape != A.shape:
        raise ValueError(f"B must have A's shape {A.shape}; got {B.shape}")
    tv_a = upper_tv(A)
    tv_b = np.zeros(A.shape, dtype=np.float64)
    _half_tv_kernel(A, B, tv_a, tv_b)
    return tv_a, tv_b


@numba.njit(inline="always", cache=True)
def _row_kappas(A, B, tv_a, i, row_ka, row_kb):
    ka = 0.0
    kb = 0.0
    for j in range(i + 1, A.shape[0]):
        if tv_a[i, j] > ka:
            ka = tv_a[i, j]
        tv_b = _tv_half(A, B, tv_a[i, j], i, j)
        if tv_b > kb:
            kb = tv_b
    row_ka[i] = ka
    row_kb[i] = kb


@numba.njit(inline="always", cache=True)
def _row_witness(A, tv_a, kappa_a, atol, i, row_count, row_best, row_j):
    count = 0
    best = np.inf
    bj = -1
    for j in range(i + 1, A.shape[0]):
        gap = kappa_a - tv_a[i, j]
        if gap <= atol:
            count += 1
        defect = gap + max(A[j, i] - A[i, i], 0.0) + max(A[i, j] - A[j, j], 0.0)
        if defect < best:
            best = defect
            bj = j
    row_count[i] = count
    row_best[i] = best
    row_j[i] = bj


@numba.njit(parallel=True, cache=True, nogil=True)
def condition_from_tv(A, B, tv_a, atol):
    """Reduce the TV matrix of A to the condition's numbers, with κ(B) of B = ½(I+A).

    A, B: (n, n) float64; tv_a: TV distances of A's rows, read from the strict
    upper triangle (:func:`upper_tv`); TV^B of each pair follows from it and B's
    entries as in :func:`upper_tv_pair`. Returns (κ(A), κ(B), number of pairs i < j with
    TV_ij ≥ κ(A) − atol, witness i, witness j). The witness is the pair of
    smallest defect δ_ij = (κ − TV_ij) + (A_ji − A_ii)₊ + (A_ij − A_jj)₊ (first
    in row-major order on ties) when that defect is at most 2·atol, else (-1, -1).

    Rows are spread over threads (row t with row n − 1 − t, for balance); the rows'
    numbers are combined in row order, so the result does not depend on the threads.
    """
    n = A.shape[0]
    half = (n + 1) // 2
    row_ka = np.zeros(n)
    row_kb = np.zeros(n)
    for t in numba.prange(half):
        _row_kappas(A, B, tv_a, t, row_ka, row_kb)
        if n - 1 - t != t:
            _row_kappas(A, B, tv_a, n - 1 - t, row_ka, row_kb)
    kappa_a = 0.0
    kappa_b = 0.0
    for i in range(n):
        kappa_a = max(kappa_a, row_ka[i])
        kappa_b = max(kappa_b, row_kb[i])
    row_count = np.zeros(n, dtype=np.int64)
    row_best = np.full(n, np.inf)
    row_j = np.full(n, -1, dtype=np.int64)
    for t in numba.prange(half):
        _row_witness(A, tv_a, kappa_a, atol, t, row_count, row_best, row_j)
        if n - 1 - t != t:
            _row_witness(A, tv_a, kappa_a, atol, n - 1 - t, row_count, row_best, row_j)
    n_max = 0
    best = np.inf
    wi = -1
    wj = -1
    for i in range(n):  # row order: the first minimal defect in row-major order
        n_max += row_count[i]
        if row_best[i] < best:
            best = row_best[i]
            wi = i
            wj = row_j[i]
    if not best <= 2.0 * atol:
        wi = -1
        wj = -1
    return kappa_a, kappa_b, n_max, wi, wj
