"""The float32 screen: which pairs' TVs can matter, from a float32 sweep with a rigorous error bound, re-checked in
float64 by the float64 sweep's own code.

The float32 sweep (:func:`rollout_equality.condition.kernels.sweep._block_tv` on a float32 copy of A) runs twice
the lanes per vector. :func:`screen_bound` bounds how far a pair's float32 TV can lie from the float64 sweep's value
(derivation below); only the pairs that can attain κ(A) within the tie band, or κ(½(I+A)), have their units of work
recomputed in float64 (:func:`_mark_block`, :func:`_recheck_block`) and reduced as the float64 engine reduces every
pair (:func:`_reduce_units`), so every output is the float64 sweep's bit for bit.
"""

from __future__ import annotations

import numba
import numpy as np

from rollout_equality.condition.kernels.sweep import _pair_tv, _row_stochastic, _tile_tv, _tv_half

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


@numba.njit(fastmath=True, cache=True, nogil=True)
def _recheck_block(A, tv, i0, tiles, within, tail, one):
    """Recompute in float64 the marked units of block i0 (see :func:`rollout_equality.condition.kernels.sweep._block_tv`) exactly as the sweep does:
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
    """Validate rows i0..i1-1 of A (:func:`rollout_equality.condition.kernels.sweep._row_stochastic`) and copy them to float32 into A32;
    returns (valid, the largest row sum)."""
    valid = True
    top = 0.0
    for i in range(i0, i1):
        ok, s = _row_stochastic(A, i, row_sum_atol)
        if not ok:
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
    tie band of lo of the maximum), g the float64 kernel's :func:`rollout_equality.condition.kernels.sweep._tv_half`: g is monotone in the TV it is
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
    """Mark the units of block i0 (see :func:`rollout_equality.condition.kernels.sweep._block_tv`) that hold a candidate pair, then write -1 (not
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
    """:func:`rollout_equality.condition.kernels.batch._block_kappas` over the recomputed units of block i0 alone, with the same arithmetic (and the
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
