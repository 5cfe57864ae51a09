"""The sweep: the total-variation (TV) distance of every pair of rows of a matrix, in float64 or float32.

The hot path of the whole project: every condition test computes the pairwise TV distances between the rows of A
and of ½(I+A), an O(n³) computation per matrix (one sweep serves both: :func:`_tv_half`), then a few O(n²)
reductions (:mod:`rollout_equality.condition.kernels.batch`). numba compiles loops that read each row pair once,
vectorise the inner sum, spread rows over threads and keep each matrix's work in cache. Each pair's sum is computed
by one thread in a fixed order, so results do not depend on the number of threads. The kernels release the GIL, so
a worker thread can analyse while the network runs.

One source serves both precisions: the float64 sweep, the reference, and the float32 sweep of the screen
(:mod:`rollout_equality.condition.kernels.screen`), each compiled from it for its own types. Only the sweep is
compiled with fast-math (reassociation lets the sum vectorise); the validation keeps NaN and inf meaningful and
the TV of ½(I+A) is computed as written.

Units of work. The rows are taken in blocks of four; block t (rows 4t..4t+3) is swept against every later row
(:func:`_block_tv`), so it costs about n − 4t. Every parallel loop runs over the blocks in the order of
:func:`_block_at` (0, last, 1, last but one, …): prange hands each thread a contiguous range of that order,
so each thread gets early and late blocks alike and the static schedule stays balanced.

The run-time one (FMA). The tile loops accumulate ``s += |x − y| · one`` with ``one`` = 1.0 passed at run time
(:attr:`rollout_equality.condition.kernels.batch.Settings.one`, ``one32``). x · 1 + s rounds once, as x + s does,
so the sum has the same bits; but the compiler cannot drop a product by a value it does not know, so the
accumulation becomes a fused multiply-add on the FMA units while the subtractions take the adders, instead of all
of it queueing on the adders. A literal 1.0, or a constant the compiler can see, would be folded away.
"""

from __future__ import annotations

import numba
import numpy as np
from numba import types
from numba.extending import overload


@numba.njit(inline="always", cache=True)
def _block_at(q, n_blocks):
    """The q-th block of the balanced order 0, n_blocks − 1, 1, n_blocks − 2, … (module docstring: units of work)."""
    return q // 2 if q % 2 == 0 else n_blocks - 1 - q // 2


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _pair_sum(a, b):
    """Σ_k |a_k − b_k| in an order fixed by the source: sixteen running sums over k ≡ 0 … 15 (mod 16), combined
    pairwise, then the last n mod 16 terms in order.

    Compiled without reassociation, so the sum has these bits wherever the code ends up: a reassociated loop is
    ordered by LLVM, again in each kernel's module that holds a copy, so a kernel compiled in this process and
    one loaded from numba's cache (or the float64 sweep and the screen's float64 re-check) could differ in the
    last bit of a pair's TV. The sixteen independent sums vectorise (two 8-lane or four 4-lane vectors)."""
    n = a.shape[0]
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    s8 = s9 = s10 = s11 = s12 = s13 = s14 = s15 = 0.0
    k = 0
    while k + 16 <= n:
        s0 += abs(a[k] - b[k])
        s1 += abs(a[k + 1] - b[k + 1])
        s2 += abs(a[k + 2] - b[k + 2])
        s3 += abs(a[k + 3] - b[k + 3])
        s4 += abs(a[k + 4] - b[k + 4])
        s5 += abs(a[k + 5] - b[k + 5])
        s6 += abs(a[k + 6] - b[k + 6])
        s7 += abs(a[k + 7] - b[k + 7])
        s8 += abs(a[k + 8] - b[k + 8])
        s9 += abs(a[k + 9] - b[k + 9])
        s10 += abs(a[k + 10] - b[k + 10])
        s11 += abs(a[k + 11] - b[k + 11])
        s12 += abs(a[k + 12] - b[k + 12])
        s13 += abs(a[k + 13] - b[k + 13])
        s14 += abs(a[k + 14] - b[k + 14])
        s15 += abs(a[k + 15] - b[k + 15])
        k += 16
    s = (((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))) + (((s8 + s9) + (s10 + s11)) + ((s12 + s13) + (s14 + s15)))
    while k < n:
        s += abs(a[k] - b[k])
        k += 1
    return s


@numba.njit(inline="always", cache=True)
def _pair_tv64(A, out, i, j):
    out[i, j] = 0.5 * _pair_sum(A[i], A[j])


@numba.njit(fastmath=True, inline="always", cache=True)
def _pair_tv32(A, out, i, j):
    n = A.shape[1]
    s = np.float32(0.0)
    for k in range(n):
        s += abs(A[i, k] - A[j, k])
    out[i, j] = np.float32(0.5) * s


def _pair_tv(A, out, i, j):
    """out[i, j] = TV of rows i and j of A, one pair alone, in A's precision (:func:`_pair_tv_of`)."""
    raise NotImplementedError("compiled code only: numba inlines the implementation for A's precision")


@overload(_pair_tv, jit_options={"fastmath": True, "nogil": True})
def _pair_tv_of(A, out, i, j):
    """:func:`_pair_tv` for A's precision: in float64 the fixed-order :func:`_pair_sum` (the sweep and the
    screen's re-check take the same order wherever they are compiled); in float32 a plain loop in the order the
    compiler picks (the screen's bound allows any order, :func:`rollout_equality.condition.kernels.screen.screen_bound`).
    Compiled with the flags of its callers (:func:`_block_tv`, the screen's re-check), which each pair function's
    code takes on when it is inlined."""
    if A.dtype == types.float32:
        return lambda A, out, i, j: _pair_tv32(A, out, i, j)
    return lambda A, out, i, j: _pair_tv64(A, out, i, j)


@numba.njit(fastmath=True, cache=True, nogil=True)
def _tile_tv(A, out, i0, j, one):
    """TV of rows i0..i0+3 against rows j..j+3 (a 4 × 4 tile of pairs), into out, in the precision of A, out and
    ``one``, the run-time 1.0 (module docstring: the FMA): float64 for the sweep, float32 for the screen (16 lanes
    per AVX-512 vector, 8 on AVX2). One source, compiled once per precision: the float32 constants below are
    exact, and in float64 they are widened at compile time.

    Each loaded element serves four pairs, so the loop is bound by arithmetic rather than by reading rows from
    cache.

    The sweep (:func:`_block_tv`) and the float64 re-check of screened candidates
    (:func:`rollout_equality.condition.kernels.screen._recheck_block`) both call this function, so a pair's sum
    is taken in the same order (the compiler's vectorised, reassociated order of this loop) by both. A kernel's
    module holds its own copy of it, optimised again there; the vectorised loop keeps its order through that (a
    vectorised loop is not vectorised again), which
    ``test_the_screen_re_checks_as_the_sweep_whichever_kernel_came_from_the_cache`` checks.
    """
    n = A.shape[1]
    r0, r1, r2, r3 = A[i0], A[i0 + 1], A[i0 + 2], A[i0 + 3]
    b0, b1, b2, b3 = A[j], A[j + 1], A[j + 2], A[j + 3]
    z = np.float32(0.0)
    s00 = s01 = s02 = s03 = z
    s10 = s11 = s12 = s13 = z
    s20 = s21 = s22 = s23 = z
    s30 = s31 = s32 = s33 = z
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
    h = np.float32(0.5)
    out[i0, j] = h * s00
    out[i0, j + 1] = h * s01
    out[i0, j + 2] = h * s02
    out[i0, j + 3] = h * s03
    out[i0 + 1, j] = h * s10
    out[i0 + 1, j + 1] = h * s11
    out[i0 + 1, j + 2] = h * s12
    out[i0 + 1, j + 3] = h * s13
    out[i0 + 2, j] = h * s20
    out[i0 + 2, j + 1] = h * s21
    out[i0 + 2, j + 2] = h * s22
    out[i0 + 2, j + 3] = h * s23
    out[i0 + 3, j] = h * s30
    out[i0 + 3, j + 1] = h * s31
    out[i0 + 3, j + 2] = h * s32
    out[i0 + 3, j + 3] = h * s33


@numba.njit(fastmath=True, cache=True, nogil=True)
def _block_tv(A, out, i0, one):
    """TV of rows i0..i0+3 against every later row, written into out, in A's precision (float64: the sweep;
    float32: the screen's sweep of A's float32 copy).

    Work units, in this order: the pairs inside the block (:func:`_pair_tv`); the 4 × 4 tiles
    of later rows j, j + 1, j + 2, j + 3 for j = i0 + 4, i0 + 8, … while a whole tile fits
    (:func:`_tile_tv`); the last n mod 4 columns pair by pair. The last, partial block has only
    its inside pairs. :func:`rollout_equality.condition.kernels.screen._recheck_block` recomputes any of these
    units the same way.
    """
    n = A.shape[0]
    i1 = min(i0 + 4, n)
    for i in range(i0, i1):
        for j in range(i + 1, i1):
            _pair_tv(A, out, i, j)
    if i1 - i0 < 4:  # the last, partial block has no later rows
        return
    j = i1
    while j + 3 < n:
        _tile_tv(A, out, i0, j, one)
        j += 4
    for jj in range(j, n):
        for i in range(i0, i1):
            _pair_tv(A, out, i, jj)


@numba.njit(parallel=True, fastmath=True, cache=True, nogil=True)
def _upper_tv_kernel(A, out, one):
    n_blocks = (A.shape[0] + 3) // 4
    for q in numba.prange(n_blocks):
        _block_tv(A, out, 4 * _block_at(q, n_blocks), one)


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
    """TV of rows i, j of B = ½(I + A), given TV^A_ij from the sweep over A.

    Row i of B is ½A_i· off the diagonal, so for a pair i < j the two TV sums share every term but k ∈ {i, j}:
    TV^B_ij is the sweep's sum without those two terms, halved, plus |B_ii − B_ji| + |B_ij − B_jj| read from B's
    entries (O(1) a pair). This is the definition of TV^B evaluated term by term, not the characterisation it is
    checked against (which needs no B)."""
    # Σ_k |A_ik − A_jk| over k ∉ {i, j}: the sweep's sum less its two diagonal terms
    off = 2.0 * tv_a_ij - abs(A[i, i] - A[j, i]) - abs(A[i, j] - A[j, j])
    # B's off-diagonal entries are ½A's (exactly, in floating point too); its two
    # diagonal terms are read from B itself
    return 0.5 * (0.5 * off + abs(B[i, i] - B[j, i]) + abs(B[i, j] - B[j, j]))


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
def _row_stochastic(A, i, row_sum_atol):
    """(whether row i of A has only finite entries ≥ 0 and sums to 1 within ``row_sum_atol``, its sum): the one
    validity check of both engines."""
    s, negative = _row_sum_and_negatives(A, i)
    # a NaN or +inf entry makes the sum NaN or +inf (no -inf: that is counted as negative)
    return negative == 0 and abs(s - 1.0) <= row_sum_atol, s


@numba.njit(cache=True, nogil=True)
def _rows_stochastic(A, i0, i1, row_sum_atol):
    """Whether rows i0..i1-1 of A have only finite entries ≥ 0 and sum to 1 within ``row_sum_atol``."""
    for i in range(i0, i1):
        if not _row_stochastic(A, i, row_sum_atol)[0]:
            return False
    return True


@numba.njit(cache=True, nogil=True)
def _check_and_sweep(A, tv, block, row_sum_atol, one):
    """Validate rows 4·block..4·block+3 of A and write their TV against every later row into tv;
    returns whether the rows are stochastic (the sweep runs either way: its result is then unused)."""
    valid = _rows_stochastic(A, 4 * block, min(4 * block + 4, A.shape[0]), row_sum_atol)
    _block_tv(A, tv, 4 * block, one)
    return valid
