"""The condition test of a whole batch in one compiled call, with either engine.

:func:`analyse_batch` validates each matrix, sweeps it (:mod:`rollout_equality.condition.kernels.sweep`, or the
float32 screen of :mod:`rollout_equality.condition.kernels.screen`) and takes each row's maxima in one parallel
region per matrix, then the count and the witness over the few rows that can hold them. κ(A) alone (the rollout's
κ) is the same call with ``condition`` off: it skips κ(½(I+A)), the count, the witness and the tie band. Its two
engines, chosen by :class:`Settings` (built by :class:`rollout_equality.condition.dobrushin.Engine`):

- the float64 sweep, the reference: every pair's TV in float64;
- the float32 screen (the default from n = ``screen_min_n``): it sweeps float32 copies of the rows, bounds the
  float32 error rigorously, and recomputes in float64, with the float64 sweep's own tile and pair code, only the
  pairs that can attain κ(A) within the tie band or κ(½(I+A)). The outputs are the float64 sweep's bit for bit.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numba
import numpy as np

from rollout_equality.condition.kernels.screen import (
    _block_screen,
    _check_and_copy,
    _floor_a,
    _mark_block,
    _recheck_block,
    _reduce_units,
    screen_bound,
)
from rollout_equality.condition.kernels.sweep import _block_at, _block_tv, _check_and_sweep, _tv_half

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

    Allocating and zeroing fresh arrays on every call costs measurably; each thread keeps its own, so the analysis
    may run beside other work. The last few sizes are kept (a thread that analyses both token sets of an input
    alternates between n and its content count).
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
    """The run-time one of the float64 tile loops (:mod:`rollout_equality.condition.kernels.sweep`: the FMA)."""
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
    (:func:`rollout_equality.condition.kernels.sweep._block_tv` on the float32 copy), with each block's largest TV and a lower bound of κ(B) (:func:`rollout_equality.condition.kernels.screen._block_screen`); then,
    block by block, the candidate pairs (those whose float64 TV can lie within 2·atol of κ(A), the band the
    count and the witness look at, or can attain κ(B); bound: :func:`~rollout_equality.condition.kernels.screen.screen_bound`) have their units recomputed
    in float64 by the float64 sweep's own code (:mod:`rollout_equality.condition.kernels.screen`) and reduced
    exactly as the float64 engine reduces every pair: a pair outside the band cannot
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
                _block_tv(A32, tv32, 4 * t, one32)
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


@numba.njit(parallel=True, cache=True, nogil=True)
def half_identity_batch(M, B):
    """B[b] = ½(I + M[b]) for each matrix of a (batch, n, n) float64 array, entry by entry as
    :func:`_half_identity` (exactly numpy's ``0.5 * (np.eye(n) + M)``), in one pass."""
    for b in numba.prange(M.shape[0]):
        _half_identity(M[b], B[b])
