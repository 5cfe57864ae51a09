"""Compiled CPU kernels of the condition test (numba).

The hot path of the whole project: every condition test computes the pairwise
total-variation (TV) distances between the rows of A and of ½(I+A), an O(n³)
computation per matrix (one sweep serves both: :func:`upper_tv_pair`), then a
few O(n²) reductions. numba compiles loops that
read each row pair once, vectorise the inner sum, spread rows over threads and
keep each matrix's work in cache. Each pair's sum is computed by one thread in
a fixed order, so results do not depend on the number of threads. The kernels
release the GIL, so a worker thread can analyse while the network runs.

:func:`condition_batch` and :func:`kappa_batch` do a whole batch in one call:
validation, the sweep and each row's maxima in one parallel region per matrix,
then the count and the witness over the few rows that can hold them. Only the
sweep is compiled with fast-math (reassociation lets the sum vectorise); the
validation keeps NaN and inf meaningful and the TV of B is computed as written.
"""

from __future__ import annotations

import threading
import types

import numba
import numpy as np

_local = threading.local()


def workspace(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Two (n, n) float64 work arrays of this thread, kept between calls.

    Allocating and zeroing two fresh arrays on every call cost measurably at n = 257
    (185× → 189× the naive version once they were kept); each thread keeps its own, so
    the analysis may run beside other work. The last few sizes are kept (a thread that
    analyses both token sets of an input alternates between n and its content count).
    """
    cache = getattr(_local, "ws", None)
    if cache is None:
        cache = _local.ws = {}
    ws = cache.get(n)
    if ws is None:
        if len(cache) >= 4:
            cache.clear()
        ws = cache[n] = (np.empty((n, n)), np.empty((n, n)))
    return ws


def _serial_twin(kernel):
    """``kernel`` compiled again without ``parallel=True``: its ``prange`` loops run as plain loops on the
    calling thread, with the same per-pair arithmetic (the results are the same bit for bit; each pair's sum is
    computed in a fixed order either way). For work spread over threads by the caller, one task per thread
    (:func:`rollout_equality.dobrushin.serial_kernels`): no OpenMP team is woken, and concurrent calls are safe
    with every numba threading layer. The twin has its own name, so numba caches it apart."""
    f = kernel.py_func
    name = f"{f.__name__}_serial"
    twin = types.FunctionType(f.__code__, f.__globals__, name, f.__defaults__, f.__closure__)
    twin.__qualname__ = name
    twin.__doc__ = f"As :func:`{f.__name__}`, on the calling thread alone."
    return numba.njit(cache=True, nogil=True)(twin)


@numba.njit(fastmath=True, inline="always", cache=True)
def _pair_tv(A, out, i, j):
    n = A.shape[1]
    s = 0.0
    for k in range(n):
        s += abs(A[i, k] - A[j, k])
    out[i, j] = 0.5 * s


@numba.njit(fastmath=True, cache=True, nogil=True)
def _block_tv(A, out, i0, one):
    """TV of rows i0..i0+3 against every later row.

    Pairs go in 4 × 4 tiles: each loaded element serves four pairs, so the loop
    is bound by arithmetic rather than by reading rows from cache (1.3-1.6×
    faster than one pair at a time at n = 257 and 1370).

    ``one`` is 1.0, passed at run time: ``s += |x − y| · one`` is the same sum bit for bit
    (x · 1 + s rounds once, as x + s does), but the compiler cannot drop the product, so the
    accumulation becomes a fused multiply-add on the FMA units while the subtractions take
    the adders, instead of all of it queueing on the adders (1.15-1.25× at n = 197-1370).
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
            s00 += abs(x0 - y0) * one
            s01 += abs(x0 - y1) * one
            s02 += abs(x0 - y2) * one
            s03 += abs(x0 - y3) * one
            s10 += abs(x1 - y0) * one
            s11 += abs(x1 - y1) * one
            s12 += abs(x1 - y2) * one
            s13 += abs(x1 - y3) * one
            s20 += abs(x2 - y0) * one
            s21 += abs(x2 - y1) * one
            s22 += abs(x2 - y2) * one
            s23 += abs(x2 - y3) * one
            s30 += abs(x3 - y0) * one
            s31 += abs(x3 - y1) * one
            s32 += abs(x3 - y2) * one
            s33 += abs(x3 - y3) * one
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
def _upper_tv_kernel(A, out, one):
    # Block b (rows 4b..4b+3) costs about n - 4b; pairing block t with the last
    # but t gives every work item the same cost, so prange's static schedule
    # stays balanced.
    n_blocks = (A.shape[0] + 3) // 4
    half = (n_blocks + 1) // 2
    for t in numba.prange(half):
        _block_tv(A, out, 4 * t, one)
        if n_blocks - 1 - t != t:
            _block_tv(A, out, 4 * (n_blocks - 1 - t), one)


def upper_tv(A: np.ndarray) -> np.ndarray:
    """TV distances ½‖A_i· − A_j·‖₁ for i < j of one float64 (n, n) matrix.

    Returns an (n, n) array holding them in its strict upper triangle, zeros elsewhere.
    """
    A = np.ascontiguousarray(A, dtype=np.float64)
    out = np.zeros(A.shape, dtype=np.float64)
    _upper_tv_kernel(A, out, 1.0)
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


# ----------------------------------------------------------------------------
# The whole condition test in one compiled call
# ----------------------------------------------------------------------------


@numba.njit(cache=True, nogil=True)
def _rows_stochastic(A, i0, i1, row_sum_atol):
    """Whether rows i0..i1-1 of A have only finite entries ≥ 0 and sum to 1 within ``row_sum_atol``."""
    for i in range(i0, i1):
        s, negative = _row_sum_and_negatives(A, i)
        # a NaN or +inf entry makes the sum NaN or +inf (no -inf: that is counted as negative)
        if negative > 0 or not abs(s - 1.0) <= row_sum_atol:
            return False
    return True


@numba.njit(fastmath={"reassoc"}, cache=True, nogil=True)
def _row_sum_and_negatives(A, i):
    # reassociation only (NaN and inf keep their meaning): the sum and the count vectorise
    s = 0.0
    negative = 0
    for k in range(A.shape[1]):
        s += A[i, k]
        negative += A[i, k] < 0.0
    return s, negative


@numba.njit(cache=True, nogil=True)
def _check_and_sweep(A, tv, block, row_sum_atol, one):
    """Validate rows 4·block..4·block+3 of A and write their TV against every later row into tv;
    returns whether the rows are stochastic (the sweep runs either way: its result is then unused)."""
    valid = _rows_stochastic(A, 4 * block, min(4 * block + 4, A.shape[0]), row_sum_atol)
    _block_tv(A, tv, 4 * block, one)
    return valid


@numba.njit(cache=True, nogil=True)
def _half_identity(A, B):
    """B = ½(I + A), entry by entry (exactly numpy's 0.5 * (np.eye(n) + A))."""
    n = A.shape[0]
    for i in range(n):
        for k in range(n):
            B[i, k] = 0.5 * A[i, k]
        B[i, i] = 0.5 * (1.0 + A[i, i])


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _block_kappas(A, B, tv_a, i0, row_ka, row_kb):
    """κ(A) and κ(B) over the pairs (i, j > i) of rows i0..i0+3, from their TV^A in ``tv_a``.

    Row by row along j: TV^A_ij, A_ij and B_ij are read in order; A_ji and B_ji are the block's columns,
    one cache line of row j for all four rows."""
    n = A.shape[0]
    for i in range(i0, min(i0 + 4, n)):
        ka = 0.0
        kb = 0.0
        for j in range(i + 1, n):
            ta = tv_a[i, j]
            ka = max(ka, ta)
            kb = max(kb, _tv_half(A, B, ta, i, j))
        row_ka[i] = ka
        row_kb[i] = kb


@numba.njit(cache=True, nogil=True)
def _count_and_witness(A, tv_a, row_ka, kappa_a, atol):
    """(pairs with TV ≥ κ − atol, witness i, witness j) given κ(A) and each row's largest TV.

    The witness is the pair of smallest defect δ_ij = (κ − TV_ij) + (A_ji − A_ii)₊ + (A_ij − A_jj)₊, first in
    row-major order on ties, when that defect is at most 2·atol. A defect is at least its gap κ − TV_ij (also
    in floating point: rounding is monotone), so only rows whose largest TV is within 2·atol of κ can hold the
    witness or a pair counted, and only their pairs within 2·atol are looked at: the same answer as a pass
    over every pair.
    """
    n = A.shape[0]
    n_max = 0
    best = np.inf
    wi = -1
    wj = -1
    for i in range(n):
        if not kappa_a - row_ka[i] <= 2.0 * atol:
            continue
        for j in range(i + 1, n):
            gap = kappa_a - tv_a[i, j]
            if gap <= 2.0 * atol:
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
    return n_max, wi, wj


@numba.njit(parallel=True, cache=True, nogil=True)
def condition_batch(M, atol, row_sum_atol, kappa, kappa_half, n_max, witness, B, tv, one):
    """The condition test of each matrix of a (batch, n, n) float64 array, in one call.

    Writes, for matrix b: kappa[b] = κ(A), kappa_half[b] = κ(B) of B = ½(I + A) built from A's entries
    (:func:`_half_identity`) and computed from them (TV^B of each pair as in :func:`upper_tv_pair`),
    n_max[b] = pairs i < j with TV_ij ≥ κ − atol, witness[b] = (i, j) of smallest defect when it is at
    most 2·atol, else (-1, -1) (:func:`_count_and_witness`).
    B, tv: (n, n) float64 work arrays (:func:`workspace`); B ends as the last matrix's ½(I + A), tv holds its
    TV distances in the strict upper triangle. one: 1.0 (see :func:`_block_tv`).
    Returns False when an entry is negative or not finite or a row sum is off by more than
    ``row_sum_atol`` (the outputs are then meaningless; :func:`rollout_equality.dobrushin.check_stochastic`
    says where).

    The O(n³) sweep and each row's maxima run in one parallel region per matrix (block t with block
    n_blocks − 1 − t, for balance); everything else is combined in row order, so the result does not
    depend on the number of threads.
    """
    n = M.shape[1]
    row_ka = np.zeros(n)
    row_kb = np.zeros(n)
    n_blocks = (n + 3) // 4
    half = (n_blocks + 1) // 2
    valid = np.ones(n_blocks, dtype=np.bool_)
    for b in range(M.shape[0]):
        A = M[b]
        _half_identity(A, B)
        for t in numba.prange(half):
            valid[t] = _check_and_sweep(A, tv, t, row_sum_atol, one)
            _block_kappas(A, B, tv, 4 * t, row_ka, row_kb)
            u = n_blocks - 1 - t
            if u != t:
                valid[u] = _check_and_sweep(A, tv, u, row_sum_atol, one)
                _block_kappas(A, B, tv, 4 * u, row_ka, row_kb)
        if not valid.all():
            return False
        kappa[b] = row_ka.max()
        kappa_half[b] = row_kb.max()
        n_max[b], witness[b, 0], witness[b, 1] = _count_and_witness(A, tv, row_ka, kappa[b], atol)
    return True


condition_batch_serial = _serial_twin(condition_batch)


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _block_max(tv, i0):
    n = tv.shape[0]
    m = 0.0
    for i in range(i0, min(i0 + 4, n)):
        for j in range(i + 1, n):
            if tv[i, j] > m:
                m = tv[i, j]
    return m


@numba.njit(parallel=True, cache=True, nogil=True)
def kappa_batch(M, row_sum_atol, kappa, tv, one):
    """κ of each matrix of a (batch, n, n) float64 array into kappa[b], tv an (n, n) work array, one 1.0; False when
    the array is not row-stochastic within ``row_sum_atol`` (see :func:`condition_batch`)."""
    n = M.shape[1]
    n_blocks = (n + 3) // 4
    half = (n_blocks + 1) // 2
    block_max = np.zeros(n_blocks)
    valid = np.ones(n_blocks, dtype=np.bool_)
    for b in range(M.shape[0]):
        A = M[b]
        for t in numba.prange(half):
            valid[t] = _check_and_sweep(A, tv, t, row_sum_atol, one)
            block_max[t] = _block_max(tv, 4 * t)
            u = n_blocks - 1 - t
            if u != t:
                valid[u] = _check_and_sweep(A, tv, u, row_sum_atol, one)
                block_max[u] = _block_max(tv, 4 * u)
        if not valid.all():
            return False
        kappa[b] = block_max.max()
    return True


kappa_batch_serial = _serial_twin(kappa_batch)


@numba.njit(parallel=True, cache=True, nogil=True)
def half_identity_batch(M, B):
    """B[b] = ½(I + M[b]) for each matrix of a (batch, n, n) float64 array, entry by entry as
    :func:`_half_identity` (exactly numpy's ``0.5 * (np.eye(n) + M)``), in one pass."""
    for b in numba.prange(M.shape[0]):
        _half_identity(M[b], B[b])


half_identity_batch_serial = _serial_twin(half_identity_batch)


# ----------------------------------------------------------------------------
# The content block, renormalised
# ----------------------------------------------------------------------------


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


restrict_rows_serial = _serial_twin(restrict_rows)
