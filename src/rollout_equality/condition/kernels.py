"""Compiled CPU kernels of the condition test (numba).

The hot path of the whole project: every condition test computes the pairwise total-variation (TV) distances
between the rows of A and of ½(I+A), an O(n³) computation per matrix (one sweep serves both: :func:`_tv_half`),
then a few O(n²) reductions. numba compiles loops that read each row pair once, vectorise the inner sum, spread
rows over threads and keep each matrix's work in cache. Each pair's sum is computed by one thread in a fixed
order, so results do not depend on the number of threads. The kernels release the GIL, so a worker thread can
analyse while the network runs.

One kernel, :func:`analyse_batch`, does a whole batch in one call: validation, the sweep and each row's maxima
in one parallel region per matrix, then the count and the witness over the few rows that can hold them. κ(A)
alone (the rollout's κ) is the same call with ``condition`` off: it skips κ(½(I+A)), the count, the witness and
the tie band. It has two engines, chosen by :class:`Settings` (built by :class:`rollout_equality.condition.dobrushin.Engine`):

- the float64 sweep, the reference: every pair's TV in float64;
- the float32 screen (the default from n = ``screen_min_n``): it sweeps float32 copies of the rows (twice the
  lanes per vector), bounds the float32 error rigorously (:func:`screen_bound`, derived below), and recomputes in
  float64, with the float64 sweep's own tile and pair code, only the pairs that can attain κ(A) within the tie
  band or κ(½(I+A)). The outputs are the float64 sweep's bit for bit.

Only the sweep is compiled with fast-math (reassociation lets the sum vectorise); the validation keeps NaN and
inf meaningful and the TV of ½(I+A) is computed as written.

Units of work. The rows are taken in blocks of four; block t (rows 4t..4t+3) is swept against every later row
(:func:`_block_tv`), so it costs about n − 4t. Every parallel loop runs over the blocks in the order of
:func:`_block_at` (0, last, 1, last but one, …): prange hands each thread a contiguous range of that order,
so each thread gets early and late blocks alike and the static schedule stays balanced.

The run-time one (FMA). The tile loops accumulate ``s += |x − y| · one`` with ``one`` = 1.0 passed at run time
(:attr:`Settings.one`, :attr:`Settings.one32`). x · 1 + s rounds once, as x + s does, so the sum has the same
bits; but the compiler cannot drop a product by a value it does not know, so the accumulation becomes a fused
multiply-add on the FMA units while the subtractions take the adders, instead of all of it queueing on the
adders (1.15-1.25× at n = 197-1370). A literal 1.0, or a constant the compiler can see, would be folded away.
"""

from __future__ import annotations

import threading
import types
from typing import NamedTuple

import numba
import numpy as np

_local = threading.local()


class Workspace(NamedTuple):
    """A thread's (n, n) work arrays for :func:`analyse_batch`: B = ½(I + A), the float64 TVs, and the screen's
    float32 copy of A and its TVs. Their contents between calls do not matter."""

    B: np.ndarray
    tv: np.ndarray
    a32: np.ndarray
    tv32: np.ndarray


def workspace(n: int) -> Workspace:
    """This thread's :class:`Workspace` for (n, n) matrices, kept between calls.

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
        ws = cache[n] = Workspace(
            np.empty((n, n)), np.empty((n, n)), np.empty((n, n), np.float32), np.empty((n, n), np.float32)
        )
    return ws


class Settings(NamedTuple):
    """What one call of :func:`analyse_batch` computes, and with which engine (scalars only)."""

    condition: bool
    """The whole condition test: κ(A), κ(½(I+A)), the count and the witness; False: κ(A) alone."""
    atol: float
    """The condition test's tolerance (the count's band is atol, the witness's 2·atol); unused for κ alone."""
    row_sum_atol: float
    """How far a row sum may stray from 1 (np.inf: not checked)."""
    screen: bool
    """Screen the sweep in float32 (False: the float64 sweep alone, the reference)."""
    screen_min_n: int
    """Smaller matrices take the float64 sweep."""
    screen_max_work: float
    """When a matrix re-checks more than this share of its pairs, the rest of the batch takes the float64 sweep."""
    one: float = 1.0
    """The run-time one of the float64 tile loops (module docstring: the FMA)."""
    one32: np.float32 = np.float32(1.0)
    """The same for the float32 tile loops."""


class Outputs(NamedTuple):
    """The outputs of :func:`analyse_batch` for a batch of m matrices (:meth:`empty`)."""

    kappa: np.ndarray
    """(m,) κ(A)."""
    kappa_half: np.ndarray
    """(m,) κ(½(I+A)) (condition only)."""
    n_max: np.ndarray
    """(m,) int64: pairs i < j with TV_ij ≥ κ − atol (condition only)."""
    witness: np.ndarray
    """(m, 2) int64: the pair of smallest defect when it is at most 2·atol, else (-1, -1) (condition only)."""
    work: np.ndarray
    """(m,) int64: pairs recomputed in float64 by the screen, -1 where the matrix took the float64 sweep alone."""

    @classmethod
    def empty(cls, m: int) -> Outputs:
        return cls(np.empty(m), np.empty(m), np.empty(m, np.int64), np.empty((m, 2), np.int64), np.empty(m, np.int64))


def _serial_twin(kernel):
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


@numba.njit(inline="always", cache=True)
def _block_at(q, n_blocks):
    """The q-th block of the balanced order 0, n_blocks − 1, 1, n_blocks − 2, … (module docstring: units of work)."""
    return q // 2 if q % 2 == 0 else n_blocks - 1 - q // 2


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _pair_sum(a, b):
    """Σ_k |a_k − b_k| in an order fixed by the source: sixteen running sums over k ≡ 0 … 15 (mod 16), combined
    pairwise, then the last n mod 16 terms in order.

    Compiled without reassociation, so the sum has these bits wherever the code ends up. With
    reassociation (a plain loop under fastmath=True, as before) LLVM chose the order, and chose it
    differently in the standalone compilation of the sweep's block function and in the copy linked into
    (and optimised again with) each kernel's module; which copy a kernel ran depended on whether it was
    compiled in this process or loaded from numba's cache, so a kernel compiled here and one loaded from
    the cache (or the float64 sweep and the screen's float64 re-check) could differ in the last bit of a
    pair's TV. The sixteen independent sums still vectorise (two 8-lane or four 4-lane vectors)."""
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
def _pair_tv(A, out, i, j):
    out[i, j] = 0.5 * _pair_sum(A[i], A[j])


@numba.njit(fastmath=True, cache=True, nogil=True)
def _tile_tv(A, out, i0, j, one):
    """TV of rows i0..i0+3 against rows j..j+3 (a 4 × 4 tile of pairs), into out; ``one`` is the run-time 1.0
    (module docstring: the FMA).

    Each loaded element serves four pairs, so the loop is bound by arithmetic rather than by
    reading rows from cache (1.3-1.6× faster than one pair at a time at n = 257 and 1370).

    The sweep (:func:`_block_tv`) and the float64 re-check of screened candidates
    (:func:`_recheck_block`) both call this function, so a pair's sum is taken in the same order
    (the compiler's vectorised, reassociated order of this loop) by both. A kernel's module holds
    its own copy of it, optimised again there; the vectorised loop keeps its order through that (a
    vectorised loop is not vectorised again), which
    ``test_the_screen_re_checks_as_the_sweep_whichever_kernel_came_from_the_cache`` checks (the pair
    sums, :func:`_pair_sum`, did not keep theirs, and are now written in a fixed order).
    """
    n = A.shape[1]
    r0, r1, r2, r3 = A[i0], A[i0 + 1], A[i0 + 2], A[i0 + 3]
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


@numba.njit(fastmath=True, cache=True, nogil=True)
def _block_tv(A, out, i0, one):
    """TV of rows i0..i0+3 against every later row, written into out.

    Work units, in this order: the pairs inside the block (:func:`_pair_tv`); the 4 × 4 tiles
    of later rows j, j + 1, j + 2, j + 3 for j = i0 + 4, i0 + 8, … while a whole tile fits
    (:func:`_tile_tv`); the last n mod 4 columns pair by pair. The last, partial block has only
    its inside pairs. :func:`_recheck_block` recomputes any of these units the same way.
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
def _block_kappas(A, B, tv_a, i0, row_ka, row_kb, condition):
    """Each row's largest TV^A (into row_ka) and, when ``condition``, TV^B (into row_kb) over the pairs (i, j > i)
    of rows i0..i0+3, from their TV^A in ``tv_a``.

    Row by row along j: TV^A_ij, A_ij and B_ij are read in order; A_ji and B_ji are the block's columns,
    one cache line of row j for all four rows."""
    n = A.shape[0]
    for i in range(i0, min(i0 + 4, n)):
        ka = 0.0
        if condition:
            kb = 0.0
            for j in range(i + 1, n):
                ta = tv_a[i, j]
                ka = max(ka, ta)
                kb = max(kb, _tv_half(A, B, ta, i, j))
            row_kb[i] = kb
        else:
            for j in range(i + 1, n):
                ka = max(ka, tv_a[i, j])
        row_ka[i] = ka


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


# ----------------------------------------------------------------------------
# Exact float32 screening of the sweep
# ----------------------------------------------------------------------------
#
# The float64 sweep is the arithmetic of the whole analysis. Its float32 twin runs twice the lanes
# per vector; a bound on how far a pair's float32 TV can lie from the float64 kernel's value tells
# which pairs can matter, and only those are recomputed in float64, by the same code in the same
# order (_tile_tv, _pair_sum), so every output is the float64 kernel's bit for bit.
#
# The bound (see screen_bound) for a pair (i, j) of rows of non-negative float64 entries a_k, b_k
# with row sums S_i, S_j ≤ R, exact T = Σ_k |a_k − b_k|, u = 2⁻²⁴, γ_m = m·u / (1 − m·u):
#   copies     x_k = fl32(a_k): |x_k − a_k| ≤ u·a_k + η (η = 2⁻¹²⁶ covers underflow, also flushed);
#   terms      d_k = fl32(x_k − y_k): |d_k − (x_k − y_k)| ≤ u·|x_k − y_k| + η, so
#              Σ_k | |d_k| − |a_k − b_k| | ≤ u(2 + u)(S_i + S_j) + 3n·η;
#   partial sums: the kernel adds the |d_k| (each addition, or fused multiply-add by 1, rounds once)
#              in an order the compiler picks (reassociation: lanes, then their combination); any
#              binary tree of n leaves has depth ≤ n − 1, so |ŝ − Σ|d_k|| ≤ γ_{n−1}·Σ|d_k|
#              ≤ γ_{n−1}/(1 − γ_{n−1})·ŝ (the terms are ≥ 0) plus n·η; tv32 = ŝ/2 exactly;
#   float64    the kernel's own value: |2·tv64 − T| ≤ γ64_{n+1}·(S_i + S_j) (u64 = 2⁻⁵³).
# Together |tv32 − tv64| ≤ c1·tv32 + c2 with c1 = γ_{n−1}/(1 − γ_{n−1}) and
# c2 = (u(2 + u) + γ64_{n+1})·R, both rounded up (c1 by 2⁻²⁰ of itself, c2 by 2⁻⁴⁰, which also covers
# every η term for n < 2²⁰ and the float64 rounding, ≤ 2⁻⁴⁸, of the bounds and thresholds built from
# it). R is the largest row sum computed in float64, times 1 + 2⁻³⁰ (its own rounding, n < 2²⁰).
# At n = 257, κ ≈ 1: c1·tv32 + c2 ≈ 1.5e-5. The depth n − 1 is the worst case; the compiled order
# (lanes of 16) has depth about n/16, so the real error is an order of magnitude smaller.

_U32 = 2.0**-24
_U64 = 2.0**-53
_MARGIN = 2.0**-40


@numba.njit(cache=True, nogil=True)
def screen_bound(n, top_row_sum):
    """(c1, c2) with |tv32_ij − tv64_ij| ≤ c1·tv32_ij + c2 for every pair of an (n, n) matrix of
    non-negative entries whose float64 row sums are at most ``top_row_sum`` (derivation above)."""
    m = n - 1
    g32 = m * _U32 / (1.0 - m * _U32)
    c1 = g32 / (1.0 - g32) * (1.0 + 2.0**-20)
    g64 = (n + 1) * _U64 / (1.0 - (n + 1) * _U64)
    r = top_row_sum * (1.0 + 2.0**-30)
    c2 = (_U32 * (2.0 + _U32) + g64) * r + _MARGIN
    return c1, c2


@numba.njit(fastmath=True, inline="always", cache=True)
def _pair_tv32(A, out, i, j):
    n = A.shape[1]
    s = np.float32(0.0)
    for k in range(n):
        s += abs(A[i, k] - A[j, k])
    out[i, j] = np.float32(0.5) * s


@numba.njit(fastmath=True, cache=True, nogil=True)
def _tile_tv32(A, out, i0, j, one):
    """:func:`_tile_tv` in float32 (A, out float32, one np.float32(1.0)): 16 lanes per AVX-512 vector, 8 on AVX2."""
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
def _block_tv32(A, out, i0, one):
    """:func:`_block_tv` in float32, the same units."""
    n = A.shape[0]
    i1 = min(i0 + 4, n)
    for i in range(i0, i1):
        for j in range(i + 1, i1):
            _pair_tv32(A, out, i, j)
    if i1 - i0 < 4:
        return
    j = i1
    while j + 3 < n:
        _tile_tv32(A, out, i0, j, one)
        j += 4
    for jj in range(j, n):
        for i in range(i0, i1):
            _pair_tv32(A, out, i, jj)


@numba.njit(fastmath=True, cache=True, nogil=True)
def _recheck_block(A, tv, i0, tiles, within, tail, one):
    """Recompute in float64 the marked units of block i0 (see :func:`_block_tv`) exactly as the sweep does:
    the inside pairs when ``within``, tile c when tiles[c], the last columns when ``tail``.
    Returns the number of pairs recomputed."""
    n = A.shape[0]
    i1 = min(i0 + 4, n)
    work = 0
    if within:
        for i in range(i0, i1):
            for j in range(i + 1, i1):
                _pair_tv(A, tv, i, j)
                work += 1
    if i1 - i0 < 4:
        return work
    n_tiles = (n - i1) // 4
    for c in range(n_tiles):
        if tiles[c]:
            _tile_tv(A, tv, i0, i1 + 4 * c, one)
            work += 16
    if tail:
        for jj in range(i1 + 4 * n_tiles, n):
            for i in range(i0, i1):
                _pair_tv(A, tv, i, jj)
                work += 1
    return work


@numba.njit(cache=True, nogil=True)
def _check_and_copy(A, A32, i0, i1, row_sum_atol):
    """Validate rows i0..i1-1 of A (as :func:`_rows_stochastic`) and copy them to float32 into A32;
    returns (valid, the largest row sum)."""
    valid = True
    top = 0.0
    for i in range(i0, i1):
        s, negative = _row_sum_and_negatives(A, i)
        if negative > 0 or not abs(s - 1.0) <= row_sum_atol:
            valid = False
        elif s > top:
            top = s
        for k in range(A.shape[1]):
            A32[i, k] = A[i, k]
    return valid, top


@numba.njit(fastmath=True, cache=True, nogil=True)
def _row_max32(tv32, i):
    """The largest float32 TV of row i against later rows, as float64 (max is exact: any order gives it)."""
    m = np.float32(0.0)
    for j in range(i + 1, tv32.shape[1]):
        m = max(m, tv32[i, j])
    return np.float64(m)


@numba.njit(cache=True, nogil=True)
def _hi(t, c1, c2):
    """An upper bound of the float64 kernel's TV of a pair whose float32 TV is t (≥ it also after the two
    roundings here: c2 holds 2⁻⁴⁰ to spare). Monotone in t."""
    return t + (c1 * t + c2)


@numba.njit(cache=True, nogil=True)
def _lo(t, c1, c2):
    """A lower bound (≥ 0) of the float64 kernel's TV of a pair whose float32 TV is t. Monotone in t."""
    return max(t - (c1 * t + c2), 0.0)


@numba.njit(cache=True, nogil=True)
def _floor_a(m32, c1, c2, band):
    """Least hi a pair needs to be a candidate: κ64 ≥ lo of the float32 maximum's pair, less the tie band
    and a margin (so that a pair outside has a float64 gap κ − TV > band also after rounding)."""
    return _lo(m32, c1, c2) - band - _MARGIN * (1.0 + band)


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _block_screen(A, B, tv32, row32, i0, c1, c2, band, condition):
    """Each row's largest float32 TV into row32 (rows i0..i0+3), and (block maximum, a lower bound of κ(B) when
    ``condition``, else 0).

    The lower bound is the largest g(lo_ij) over this block's pairs near its own maximum (hi_ij within the
    tie band of lo of the maximum), g the float64 kernel's :func:`_tv_half`: g is monotone in the TV it is
    given (each operation rounds monotonically) and lo_ij ≤ tv64_ij, so g(lo_ij) ≤ TV^B_ij ≤ κ(B). Which
    pairs are looked at changes only how many are re-checked later, never a result."""
    n = tv32.shape[0]
    i1 = min(i0 + 4, n)
    m = 0.0
    for i in range(i0, i1):
        row32[i] = _row_max32(tv32, i)
        m = max(m, row32[i])
    mlo = 0.0
    if condition:
        floor = _floor_a(m, c1, c2, band)
        for i in range(i0, i1):
            if _hi(row32[i], c1, c2) >= floor:
                for j in range(i + 1, n):
                    t = np.float64(tv32[i, j])
                    if _hi(t, c1, c2) >= floor:
                        mlo = max(mlo, _tv_half(A, B, _lo(t, c1, c2), i, j))
    return m, mlo


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _mark_block(A, B, tv32, row32, tv, i0, c1, c2, floor_a, floor_b, condition, tiles):
    """Mark the units of block i0 (see :func:`_block_tv`) that hold a candidate pair, then write -1 (not
    recomputed) into tv for every pair of its rows. Returns (within, tail): the inside pairs, the last columns.

    A candidate may attain κ(A) within the tie band: hi_ij ≥ floor_a; or, when ``condition``, may attain κ(B),
    whose float64 value is at least floor_b: first (no column of A read) g(x) ≤ ½(1 + x) + 2⁻⁴⁷ for the
    float64 kernel's g (|B_ii − B_ji| ≤ ½(1 + |A_ii − A_ji|) and B's rounding, six roundings of values ≤ 4),
    so hi_ij ≥ 2·floor_b − 1 − 2⁻⁴⁶ is needed (2⁻³⁶ is allowed); then g(lo_ij) + (c1·t + c2) + 2⁻⁴⁰ ≥ floor_b
    (g(hi) − g(lo) ≤ ½(hi − lo) + 2⁻⁴⁸), floor_b first raised to the largest g(lo_ij) of the block.
    Rows whose largest float32 TV passes neither test are skipped whole (hi is monotone in t)."""
    n = tv32.shape[0]
    i1 = min(i0 + 4, n)
    n_tiles = (n - i1) // 4 if i1 - i0 == 4 else 0
    j_end = i1 + 4 * n_tiles
    for c in range(n_tiles):
        tiles[c] = False
    floor_c = 2.0 * floor_b - 1.0 - 16.0 * _MARGIN if condition else np.inf
    least = min(floor_a, floor_c)
    if condition:  # the block's own lower bound of κ(B), from the pairs that pass the first test alone
        for i in range(i0, i1):
            if _hi(row32[i], c1, c2) >= floor_c:
                for j in range(i + 1, n):
                    t = np.float64(tv32[i, j])
                    if _hi(t, c1, c2) >= floor_c:
                        g = _tv_half(A, B, _lo(t, c1, c2), i, j)
                        tv[i, j] = g
                        floor_b = max(floor_b, g)
    within = False
    tail = False
    for i in range(i0, i1):
        if _hi(row32[i], c1, c2) >= least:
            for j in range(i + 1, n):
                t = np.float64(tv32[i, j])
                hi = _hi(t, c1, c2)
                cand = hi >= floor_a
                if not cand and hi >= floor_c:
                    cand = tv[i, j] + (c1 * t + c2) + _MARGIN >= floor_b
                if cand:
                    if j < i1:
                        within = True
                    elif j >= j_end:
                        tail = True
                    else:
                        tiles[(j - i1) // 4] = True
        for j in range(i + 1, n):
            tv[i, j] = -1.0
    return within, tail


@numba.njit(fastmath={"nnan", "ninf", "nsz"}, cache=True, nogil=True)
def _reduce_units(A, B, tv, i0, tiles, within, tail, row_ka, row_kb, condition):
    """:func:`_block_kappas` over the recomputed units of block i0 alone, with the same arithmetic (and the
    same results: the maximum of the same values, in another order, is the same float)."""
    n = A.shape[0]
    i1 = min(i0 + 4, n)
    n_tiles = (n - i1) // 4 if i1 - i0 == 4 else 0
    for i in range(i0, i1):
        ka = 0.0
        kb = 0.0
        if within:
            for j in range(i + 1, i1):
                ka = max(ka, tv[i, j])
                if condition:
                    kb = max(kb, _tv_half(A, B, tv[i, j], i, j))
        for c in range(n_tiles):
            if tiles[c]:
                for j in range(i1 + 4 * c, i1 + 4 * c + 4):
                    ka = max(ka, tv[i, j])
                    if condition:
                        kb = max(kb, _tv_half(A, B, tv[i, j], i, j))
        if tail:
            for j in range(i1 + 4 * n_tiles, n):
                ka = max(ka, tv[i, j])
                if condition:
                    kb = max(kb, _tv_half(A, B, tv[i, j], i, j))
        row_ka[i] = ka
        row_kb[i] = kb


# ----------------------------------------------------------------------------
# The analysis of a batch, both engines
# ----------------------------------------------------------------------------


@numba.njit(parallel=True, cache=True, nogil=True)
def analyse_batch(M, settings, kappa, kappa_half, n_max, witness, work, B, tv, A32, tv32):
    """The condition test (or κ alone) of each matrix of a (batch, n, n) float64 array, in one call.

    settings: :class:`Settings`. Writes, for matrix b, the fields of :class:`Outputs`: kappa[b] = κ(A); with
    ``settings.condition`` also kappa_half[b] = κ(B) of B = ½(I + A) built from A's entries
    (:func:`_half_identity`) and computed from them (TV^B of each pair by :func:`_tv_half`), n_max[b] = pairs
    i < j with TV_ij ≥ κ − atol, witness[b] = (i, j) of smallest defect when it is at most 2·atol, else (-1, -1)
    (:func:`_count_and_witness`); work[b] = pairs recomputed in float64 by the screen, or -1 where the matrix
    took the float64 sweep alone: the float64 engine, n < ``screen_min_n``, a row sum above 2, or a previous
    matrix of the batch re-checked more than ``screen_max_work`` of its pairs.
    B, tv, A32, tv32: a :class:`Workspace` (n, n); tv ends with the last matrix's TVs in its strict upper
    triangle (with the screen: -1 where a pair was not recomputed in float64).
    Returns False when an entry is negative or not finite or a row sum is off by more than
    ``row_sum_atol`` (the outputs are then meaningless; :func:`rollout_equality.condition.dobrushin.check_stochastic`
    says where).

    Per matrix, the float64 engine validates and sweeps each block of rows and takes its rows' maxima in one
    parallel region. The screen validates the rows while copying them to float32; sweeps them in float32
    (:func:`_block_tv32`), with each block's largest TV and a lower bound of κ(B) (:func:`_block_screen`); then,
    block by block, the candidate pairs (those whose float64 TV can lie within 2·atol of κ(A), the band the
    count and the witness look at, or can attain κ(B); bound: :func:`screen_bound`) have their units recomputed
    in float64 by the float64 sweep's own code (:func:`_mark_block`, :func:`_recheck_block`) and reduced
    exactly as the float64 engine reduces every pair (:func:`_reduce_units`): a pair outside the band cannot
    change any output. Everything else is combined in row order, so no result depends on the number of threads.
    """
    condition, atol, row_sum_atol = settings.condition, settings.atol, settings.row_sum_atol
    one, one32 = settings.one, settings.one32
    n = M.shape[1]
    n_blocks = (n + 3) // 4
    row_ka = np.zeros(n)
    row_kb = np.zeros(n)
    valid = np.ones(n_blocks, dtype=np.bool_)
    top = np.zeros(n_blocks)
    m32 = np.zeros(n_blocks)
    mlo = np.zeros(n_blocks)
    done = np.zeros(n_blocks, dtype=np.int64)
    tiles = np.zeros((n_blocks, n // 4 + 1), dtype=np.bool_)
    within = np.zeros(n_blocks, dtype=np.bool_)
    tail = np.zeros(n_blocks, dtype=np.bool_)
    row32 = np.zeros(n)
    pairs = n * (n - 1) // 2
    band = 2.0 * atol if condition else 0.0  # κ alone needs no tie band
    screen = settings.screen and n >= settings.screen_min_n
    for b in range(M.shape[0]):
        A = M[b]
        if condition:
            _half_identity(A, B)
        screened = False
        if screen:  # validate while copying to float32; the bound needs row sums ≤ 2
            for q in numba.prange(n_blocks):
                t = _block_at(q, n_blocks)
                valid[t], top[t] = _check_and_copy(A, A32, 4 * t, min(4 * t + 4, n), row_sum_atol)
            if not valid.all():
                return False
            screened = top.max() <= 2.0
        if screened:
            c1, c2 = screen_bound(n, top.max())
            for q in numba.prange(n_blocks):
                t = _block_at(q, n_blocks)
                _block_tv32(A32, tv32, 4 * t, one32)
                m32[t], mlo[t] = _block_screen(A, B, tv32, row32, 4 * t, c1, c2, band, condition)
            floor_a = _floor_a(m32.max(), c1, c2, band)
            floor_b = mlo.max()
            for q in numba.prange(n_blocks):
                t = _block_at(q, n_blocks)
                within[t], tail[t] = _mark_block(
                    A, B, tv32, row32, tv, 4 * t, c1, c2, floor_a, floor_b, condition, tiles[t]
                )
                done[t] = _recheck_block(A, tv, 4 * t, tiles[t], within[t], tail[t], one)
                _reduce_units(A, B, tv, 4 * t, tiles[t], within[t], tail[t], row_ka, row_kb, condition)
            work[b] = done.sum()
            if work[b] > settings.screen_max_work * pairs:
                screen = False  # a band full of near-ties: the rest of the batch takes the float64 sweep
        else:
            work[b] = -1
            for q in numba.prange(n_blocks):
                t = _block_at(q, n_blocks)
                if screen:  # validated above
                    _block_tv(A, tv, 4 * t, one)
                else:
                    valid[t] = _check_and_sweep(A, tv, t, row_sum_atol, one)
                _block_kappas(A, B, tv, 4 * t, row_ka, row_kb, condition)
            if not valid.all():
                return False
        kappa[b] = row_ka.max()
        if condition:
            kappa_half[b] = row_kb.max()
            n_max[b], witness[b, 0], witness[b, 1] = _count_and_witness(A, tv, row_ka, kappa[b], atol)
    return True


analyse_batch_serial = _serial_twin(analyse_batch)


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
