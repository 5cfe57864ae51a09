r"""Dobrushin coefficient, the equality condition for the rollout bound, and rollout.

For a row-stochastic matrix A (n × n) the Dobrushin coefficient is

    κ(A) = ½ · max_{i,j} Σ_k |A_ik − A_jk|,

the largest total-variation (TV) distance between two rows. Attention rollout
multiplies the factors ½(I + A_l); for each factor κ(½(I+A)) ≤ ½(1 + κ(A)).

The equality condition
----------------------
Write TV_ij for the TV distance between rows i and j of A. Expanding the rows of
B = ½(I + A) gives, for every pair i ≠ j and every entrywise non-negative A with
entries at most 1 (row sums play no part),

    TV^B_ij = ½(1 + TV_ij) − ½ · [ (A_ji − A_ii)₊ + (A_ij − A_jj)₊ ].

So κ(B) = ½(1 + κ(A)) **iff** some pair i ≠ j with TV_ij = κ(A) is *mutually
self-dominant*: A_ii ≥ A_ji and A_jj ≥ A_ij. :func:`equality_condition` reports
this characterisation (``holds``) next to an independent check that computes
κ(B) from B's own entries (``holds_direct``). Both TV matrices come from one
O(n³) sweep: B's rows are ½A's off the diagonal, so the sweep's sum over
k ∉ {i, j} serves both, and B's two diagonal terms of each pair are read from B
(:func:`rollout_equality.condition.kernels.sweep._tv_half`); validation, the sweep and every
reduction of a whole batch run in one compiled call
(:func:`rollout_equality.condition.kernels.analyse_batch`).

Tolerance semantics (``atol``, a config value, default :data:`DEFAULT_ATOL`)
--------------------------------------------------------------------------
Each pair i < j has a *defect*

    δ_ij = (κ(A) − TV_ij) + (A_ji − A_ii)₊ + (A_ij − A_jj)₊ ≥ 0,

which is 0 exactly when the pair attains κ(A) and is mutually self-dominant.

* ``holds`` (the characterisation): some pair has δ_ij ≤ 2·atol. At atol = 0
  this is the characterisation word for word; with atol > 0 a pair may miss κ
  or self-dominance by a combined 2·atol (so some pair has TV_ij ≥ κ − 2·atol
  and is self-dominant within 2·atol).
* ``holds_direct``: |κ(B) − ½(1 + κ(A))| ≤ atol, with κ(B) computed from B's
  own entries.
* ``n_max_pairs``: pairs with TV_ij ≥ κ(A) − atol (ties of the maximum).
* ``witness``: the pair of smallest defect when ``holds``.

By the identity, slack = ½(1 + κ(A)) − κ(B) = ½·min δ_ij, so both tests apply
the same tolerance to the same quantity, reached by two independent routes:
they agree up to float64 rounding of the sums (about n·1e-16, far below the
default atol = 1e-9, also for inputs that were float32). Splitting the
tolerance by criterion instead (TV within atol, each self-dominance within
atol) makes them disagree on sparse attention, whose entries of 1e-9 and below
are common.

Edge cases
----------
* n = 1: there is no pair, κ(A) = 0 and κ(B) = 0 while ½(1 + κ(A)) = ½, so
  the equality fails: ``holds = holds_direct = False``, ``n_max_pairs = 0``,
  no witness.
* Rank one (all rows equal, n ≥ 2): κ(A) = 0, every pair attains it and is
  mutually self-dominant with equality, and κ(B) = ½ = ½(1 + 0): the equality
  holds; the witness is the first pair (0, 1).

Inputs
------
numpy arrays or torch tensors of shape (..., n, n), batched over leading
dimensions. Everything is validated (see :func:`check_stochastic`) and analysed
in float64 on the CPU (a tensor on a GPU is copied to the CPU first) by a
compiled kernel. How it computes is an :class:`Engine`, passed per call; every
engine gives the same results bit for bit. Nothing is silently renormalised.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rollout_equality.condition import kernels as _kernels
from rollout_equality.condition.kernels import Outputs, Settings, upper_tv, workspace
from rollout_equality.config.schema import default


@dataclass(frozen=True)
class Engine:
    """How the CPU analysis computes: passed to each call (default :data:`DEFAULT_ENGINE`), never process-wide.

    Every engine gives the float64 sweep's results bit for bit (tests/condition/test_screening.py); the choice changes
    the speed alone."""

    screen: bool = True
    """Screen the O(n³) sweep in float32 and decide in float64 (:mod:`rollout_equality.condition.kernels`): about half the
    sweep's arithmetic. False: every pair's TV from the float64 sweep, the reference."""

    screen_min_n: int = 64
    """Smaller matrices go straight to the float64 sweep: the screen pays its extra O(n²) passes and the float32
    copy before the sweep's O(n³) saving shows (CHANGELOG, 2026-12-06, has the measurement that set 64)."""

    screen_max_work: float = 0.25
    """When a matrix's float64 re-check covers more than this fraction of its pairs (a band full of near-ties:
    nearly uniform matrices), the remaining matrices of the batch take the float64 sweep alone, without the
    float32 pass (its cost is then wasted). How much the offline suite's matrices re-check:
    benchmarks/screen_band.py (CHANGELOG, 2026-12-06, has the measurement that set 0.25)."""

    serial: bool = False
    """Run on the calling thread alone (the kernels compiled without ``parallel=True``: the same results bit for
    bit). For a caller that already spreads its work over threads, one task per thread (e.g. the two token sets
    of each input of a batch, :func:`rollout_equality.condition.analysis.analyse`), so that no second thread pool
    competes for the cores. False: each matrix's work is spread over numba's threads."""

    def __post_init__(self) -> None:
        if not self.screen_min_n >= 1:
            raise ValueError(f"screen_min_n must be at least 1; got {self.screen_min_n}")
        if not self.screen_max_work >= 0:
            raise ValueError(f"screen_max_work must be non-negative (inf: never fall back); got {self.screen_max_work}")


DEFAULT_ENGINE = Engine()
"""The engine of every analysis unless a caller passes another: the float32 screen, spread over numba's threads."""


def _kernel(name: str, engine: Engine):
    """The compiled kernel ``name`` of :mod:`rollout_equality.condition.kernels`, its serial twin for a serial engine."""
    return getattr(_kernels, f"{name}_serial" if engine.serial else name)


DEFAULT_ATOL = default("condition", "atol")
"""Tolerance of the condition test: the schema's default of ``condition.atol``."""

DEFAULT_ROW_SUM_ATOL = default("condition", "row_sum_atol")
"""How far a row sum may stray from 1: the schema's default of ``condition.row_sum_atol``."""


# ----------------------------------------------------------------------------
# Input handling
# ----------------------------------------------------------------------------


def _is_torch(A: Any) -> bool:
    return type(A).__module__.split(".")[0] == "torch"


def _to_numpy64(A: Any) -> np.ndarray:
    """A as float64 numpy; a torch tensor (on any device) is copied to the CPU."""
    if _is_torch(A):
        return A.detach().to("cpu").double().numpy()
    return np.asarray(A, dtype=np.float64)


HALF_EPSILON = {"float16": 2.0**-10, "bfloat16": 2.0**-7}
"""The machine epsilon of each half-precision type. Probabilities each rounded to the type (from a float32
softmax, as eager attention computes it) sum to 1 within half of it, whatever the row's length."""


def dtype_name(A: Any) -> str | None:
    """The floating type of an array or tensor as numpy and torch name it (``float32``, ``bfloat16``), else None."""
    dtype = getattr(A, "dtype", None)
    return None if dtype is None else str(dtype).removeprefix("torch.")


def _row_sum_advice(dtype: str | None) -> str:
    """How to proceed when a row of a matrix of ``dtype`` does not sum to 1."""
    if dtype in HALF_EPSILON:
        eps = HALF_EPSILON[dtype]
        return (
            f"the matrix is {dtype}, whose rounding moves a row sum by up to {eps / 2:.2g}: to analyse it as it is, "
            f"say so with row_sum_atol={eps:g} (the {dtype} machine epsilon), or renormalise its rows first, and "
            "report the choice (a model's attentions: rollout_equality.attention_records(..., row_sum_atol='dtype') "
            "records it)"
        )
    limits = ", ".join(f"{name} {eps:.2g}" for name, eps in HALF_EPSILON.items())
    return (
        "pass a row-stochastic matrix, each row a probability distribution (attention after its softmax, over every "
        f"key); attention computed in half precision strays by up to its machine epsilon ({limits}): to analyse it, "
        "say so with that row_sum_atol"
    )


def _where(batch_shape: tuple[int, ...], flat_index: int) -> str:
    if not batch_shape:
        return ""
    return f" of matrix {tuple(int(i) for i in np.unravel_index(flat_index, batch_shape))}"


def check_stochastic(
    A: Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, name: str = "A", dtype: str | None = None
) -> np.ndarray:
    """Validate a (batch of) row-stochastic matrices and return it as float64 numpy.

    A: array or tensor of shape (..., n, n) with n ≥ 1.
    Raises ValueError naming the problem and where it is: not square, empty,
    NaN/inf, a negative entry, or a row whose sum differs from 1 by more than
    ``row_sum_atol`` (the message names the floating type, ``dtype`` or A's own, and how to proceed).
    Nothing is renormalised.
    """
    dtype = dtype or dtype_name(A)
    M = _to_numpy64(A)
    if M.ndim < 2 or M.shape[-1] != M.shape[-2]:
        raise ValueError(f"{name} must have shape (..., n, n) (square matrices); got shape {M.shape}")
    if M.shape[-1] == 0:
        raise ValueError(f"{name} is empty (n = 0); a stochastic matrix needs at least one row")
    if row_sum_atol < 0:
        raise ValueError(f"row_sum_atol must be non-negative; got {row_sum_atol}")
    batch_shape = M.shape[:-2]
    flat = M.reshape(-1, M.shape[-1], M.shape[-1])
    bad = ~np.isfinite(flat)
    if bad.any():
        b, i, k = np.argwhere(bad)[0]
        raise ValueError(
            f"{name} has a non-finite entry ({flat[b, i, k]}) at row {i}, column {k}{_where(batch_shape, b)}"
        )
    neg = flat < 0
    if neg.any():
        b, i, k = np.argwhere(neg)[0]
        raise ValueError(
            f"{name} has a negative entry ({flat[b, i, k]:.3g}) at row {i}, column {k}{_where(batch_shape, b)}; "
            "attention probabilities must be non-negative"
        )
    sums = flat.sum(axis=-1)
    off = np.abs(sums - 1.0) > row_sum_atol
    if off.any():
        b, i = np.argwhere(off)[0]
        raise ValueError(
            f"row {i}{_where(batch_shape, b)} of {name} sums to {sums[b, i]:.10g}, not 1 "
            f"(tolerance {row_sum_atol:g}); {_row_sum_advice(dtype)}"
        )
    return M


# ----------------------------------------------------------------------------
# κ and the pairwise TV matrix
# ----------------------------------------------------------------------------


def pairwise_tv(A: Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL) -> np.ndarray:
    """Total-variation distances ½ Σ_k |A_ik − A_jk| between all pairs of rows.

    A: (..., n, n) row-stochastic. Returns float64 (..., n, n), symmetric, zero diagonal.
    """
    M = check_stochastic(A, row_sum_atol)
    n = M.shape[-1]
    tv = np.stack([upper_tv(m) for m in M.reshape(-1, n, n)])
    return (tv + np.swapaxes(tv, 1, 2)).reshape(M.shape)


def _analyse(
    M: np.ndarray,
    atol: float,
    row_sum_atol: float,
    engine: Engine,
    *,
    condition: bool,
    work: np.ndarray | None = None,
    dtype: str | None = None,
) -> Outputs:
    """The kernel's :class:`~rollout_equality.condition.kernels.Outputs` for each matrix of a float64 (..., n, n) array
    (C-contiguous, else copied), flattened over the batch, from one compiled call that also validates it
    (:func:`rollout_equality.condition.kernels.analyse_batch`): the condition test, or κ alone (``condition`` False).
    A bad entry or row sum raises ValueError. work: where given, a (batch,) int64 array that receives each
    matrix's pairs recomputed in float64 (-1: the float64 sweep alone). dtype: the floating type M was given in,
    for the message."""
    n = M.shape[-1]
    flat = np.ascontiguousarray(M, dtype=np.float64).reshape(-1, n, n)
    out = Outputs.empty(len(flat))
    if work is not None:
        out = out._replace(work=work)
    settings = Settings(
        condition=bool(condition),
        atol=float(atol),
        row_sum_atol=float(row_sum_atol),
        screen=bool(engine.screen),
        screen_min_n=int(engine.screen_min_n),
        screen_max_work=float(engine.screen_max_work),
    )
    kernel = _kernel("analyse_batch", engine)
    if not kernel(flat, settings, *out, *workspace(n)):
        check_stochastic(M, row_sum_atol, dtype=dtype)  # says where
        # numpy's row sums (pairwise) passed where the kernel's did not: rounding at the boundary
        kernel(flat, settings._replace(row_sum_atol=np.inf), *out, *workspace(n))
    return out


def kappa(A: Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, engine: Engine = DEFAULT_ENGINE) -> float | np.ndarray:
    """Dobrushin coefficient κ(A) = max_{i,j} TV_ij.

    A: (..., n, n) row-stochastic. Returns a float for one matrix, else an array
    of shape (...). κ of a 1 × 1 matrix is 0.
    """
    M = _as_matrices(A, row_sum_atol)
    k = _analyse(M, 0.0, row_sum_atol, engine, condition=False, dtype=dtype_name(A)).kappa.reshape(M.shape[:-2])
    return float(k) if k.ndim == 0 else k


# ----------------------------------------------------------------------------
# The equality condition
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ConditionResult:
    """Outcome of :func:`equality_condition`.

    For a single matrix every field is a Python scalar and ``witness`` is a pair
    ``(i, j)`` with i < j, or None. For a batch of shape (...) every field is an
    array of shape (...) and ``witness`` has shape (..., 2) with -1 where there
    is none.
    """

    n: int
    holds: Any
    holds_direct: Any
    kappa: Any
    kappa_half: Any
    bound: Any
    slack: Any
    n_max_pairs: Any
    witness: Any

    def as_dict(self) -> dict[str, Any]:
        """The fields as a dict (the witness split into ``witness_i``, ``witness_j``)."""
        d = {
            k: getattr(self, k)
            for k in ("n", "holds", "holds_direct", "kappa", "kappa_half", "bound", "slack", "n_max_pairs")
        }
        w = self.witness
        if isinstance(w, np.ndarray):
            d["witness_i"], d["witness_j"] = w[..., 0], w[..., 1]
        else:
            d["witness_i"], d["witness_j"] = (-1, -1) if w is None else w
        return d


def equality_condition(
    A: Any, atol: float = DEFAULT_ATOL, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, engine: Engine = DEFAULT_ENGINE
) -> ConditionResult:
    """Test when κ(½(I+A)) = ½(1 + κ(A)), by the characterisation and directly.

    A: (..., n, n) row-stochastic (numpy or torch). ``atol``: see the module
    docstring for the tolerance semantics. Returns a :class:`ConditionResult`.
    """
    if not atol >= 0:
        raise ValueError(f"atol must be non-negative; got {atol}")
    M = _as_matrices(A, row_sum_atol)
    out = _analyse(M, atol, row_sum_atol, engine, condition=True, dtype=dtype_name(A))
    return _result(M.shape, out.kappa, out.kappa_half, out.n_max, out.witness, atol)


def _as_matrices(A: Any, row_sum_atol: float) -> np.ndarray:
    """A as a C-contiguous float64 array, its shape checked (its entries are checked by the kernels)."""
    M = np.ascontiguousarray(_to_numpy64(A))
    if M.ndim < 2 or M.shape[-1] != M.shape[-2] or M.shape[-1] == 0 or row_sum_atol < 0:
        check_stochastic(M, row_sum_atol)  # raises, naming the problem
    return M


def _result(shape: tuple[int, ...], kap, kappa_half, n_max_pairs, witness, atol: float) -> ConditionResult:
    n = shape[-1]
    batch_shape = shape[:-2]
    holds = witness[:, 0] >= 0
    bound = 0.5 * (1.0 + kap)
    slack = bound - kappa_half
    holds_direct = np.abs(slack) <= atol

    if not batch_shape:
        return ConditionResult(
            n=n,
            holds=bool(holds[0]),
            holds_direct=bool(holds_direct[0]),
            kappa=float(kap[0]),
            kappa_half=float(kappa_half[0]),
            bound=float(bound[0]),
            slack=float(slack[0]),
            n_max_pairs=int(n_max_pairs[0]),
            witness=(int(witness[0, 0]), int(witness[0, 1])) if holds[0] else None,
        )
    return ConditionResult(
        n=n,
        holds=holds.reshape(batch_shape),
        holds_direct=holds_direct.reshape(batch_shape),
        kappa=kap.reshape(batch_shape),
        kappa_half=kappa_half.reshape(batch_shape),
        bound=bound.reshape(batch_shape),
        slack=slack.reshape(batch_shape),
        n_max_pairs=n_max_pairs.reshape(batch_shape),
        witness=witness.reshape(*batch_shape, 2),
    )


# ----------------------------------------------------------------------------
# Content-token restriction
# ----------------------------------------------------------------------------


def restrict(
    A: Any, keep: Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, engine: Engine = DEFAULT_ENGINE
) -> np.ndarray:
    """The block of A on the kept tokens, each row renormalised to sum to 1.

    A: (..., n, n) row-stochastic. keep: boolean mask of shape (n,) or integer
    indices into range(n). Returns float64 (..., m, m). Raises ValueError when
    nothing is kept, an index is out of range, or a kept row has no mass on the
    kept tokens (it cannot be renormalised).
    """
    M = check_stochastic(A, row_sum_atol)
    n = M.shape[-1]
    keep_arr = _to_numpy_index(keep)
    if keep_arr.dtype == bool:
        if keep_arr.shape != (n,):
            raise ValueError(f"keep mask must have shape ({n},) to match A; got {keep_arr.shape}")
        idx = np.flatnonzero(keep_arr)
    elif np.issubdtype(keep_arr.dtype, np.integer) and keep_arr.ndim == 1:
        idx = keep_arr.astype(np.int64)
        if idx.size and (idx.min() < 0 or idx.max() >= n):
            raise ValueError(f"keep indices must lie in 0..{n - 1}; got {idx.min()}..{idx.max()}")
        if len(np.unique(idx)) != len(idx):
            raise ValueError("keep indices contain duplicates")
    else:
        raise ValueError(
            f"keep must be a boolean mask or 1-d integer indices; got dtype {keep_arr.dtype}, shape {keep_arr.shape}"
        )
    if idx.size == 0:
        raise ValueError("keep selects no token; at least one token must be kept")
    # the block and its row sums in one compiled pass, each row summed in the order of idx
    flat = np.ascontiguousarray(M).reshape(-1, n, n)
    out = np.empty((len(flat), idx.size, idx.size))
    mass = np.empty((len(flat), idx.size))
    _kernel("restrict_rows", engine)(flat, np.ascontiguousarray(idx, dtype=np.int64), out, mass)
    empty = (mass <= 0).reshape(M.shape[:-2] + (idx.size,))
    if empty.any():
        pos = np.argwhere(empty)[0]
        row = idx[pos[-1]]
        where = f" of matrix {tuple(int(p) for p in pos[:-1])}" if len(pos) > 1 else ""
        raise ValueError(f"kept row {row}{where} puts no attention on the kept tokens and cannot be renormalised")
    return out.reshape(M.shape[:-2] + (idx.size, idx.size))


def _to_numpy_index(keep: Any) -> np.ndarray:
    if _is_torch(keep):
        return keep.detach().cpu().numpy()
    return np.asarray(keep)


# ----------------------------------------------------------------------------
# Rollout
# ----------------------------------------------------------------------------


@dataclass(frozen=True)
class RolloutResult:
    """κ of attention rollout against its bounds, at every depth.

    Each field has shape (L, ...) for L layers; entry l refers to the rollout
    through layers 0..l, R_l = B_l ⋯ B_0 with B_l = ½(I + A_l):

    * ``kappa_rollout``: κ(R_l), computed from the product itself;
    * ``product_kappa_half``: Π_{m≤l} κ(B_m);
    * ``product_bound``: Π_{m≤l} ½(1 + κ(A_m)).

    Submultiplicativity of κ gives kappa_rollout ≤ product_kappa_half ≤ product_bound.
    """

    kappa_rollout: np.ndarray
    product_kappa_half: np.ndarray
    product_bound: np.ndarray


def _stack_layers(layers: Sequence[Any] | Any, row_sum_atol: float) -> np.ndarray:
    if _is_torch(layers) or isinstance(layers, np.ndarray):
        stack = check_stochastic(layers, row_sum_atol, name="layers")
        if stack.ndim < 3:
            raise ValueError(f"layers must have shape (L, ..., n, n); got {stack.shape}")
        return stack
    if len(layers) == 0:
        raise ValueError("rollout needs at least one layer")
    mats = [check_stochastic(A, row_sum_atol, name=f"layer {l}") for l, A in enumerate(layers)]
    shapes = {m.shape for m in mats}
    if len(shapes) != 1:
        raise ValueError(f"all layers must have the same shape; got {sorted(shapes)}")
    return np.stack(mats)


def rollout_kappa(
    layers: Sequence[Any] | Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, engine: Engine = DEFAULT_ENGINE
) -> np.ndarray:
    """κ(R_l) for the rollout R_l = B_l ⋯ B_0, B_l = ½(I + A_l), at every depth l.

    layers: a sequence of L matrices of shape (..., n, n), or an array (L, ..., n, n).
    Returns an array of shape (L, ...).
    """
    return _rollout_kappa(_stack_layers(layers, row_sum_atol), row_sum_atol, engine)


def _rollout_kappa(stack: np.ndarray, row_sum_atol: float, engine: Engine = DEFAULT_ENGINE) -> np.ndarray:
    """:func:`rollout_kappa` of a validated float64 stack (L, ..., n, n)."""
    n = stack.shape[-1]
    B = np.empty(stack.shape)
    _kernel("half_identity_batch", engine)(np.ascontiguousarray(stack).reshape(-1, n, n), B.reshape(-1, n, n))
    R = np.empty_like(B)
    R[0] = B[0]
    # torch's matrix product (its own thread pool, as the forward pass): on 2 cores 1.6× faster than
    # numpy's on one BLAS thread, while numpy's threaded BLAS keeps its threads spinning after the
    # products and slows the TV kernel that runs next (1.5×). Callers that run several rollouts at once
    # on their own threads give torch one thread meanwhile (rollout_equality.measure.measure_inputs), so
    # each product runs on its caller's thread. (numpy's BLAS limited to one thread per task was ~1.2×
    # faster for two concurrent chains here, but its products differ from torch's in the last bits.)
    import torch

    Bt, Rt = torch.from_numpy(B), torch.from_numpy(R)
    for layer in range(1, len(B)):
        torch.matmul(Bt[layer], Rt[layer - 1], out=Rt[layer])
    # row sums of a product drift by at most the sum of the factors' drifts
    return _analyse(R, 0.0, row_sum_atol * len(B), engine, condition=False).kappa.reshape(R.shape[:-2])


def rollout(
    layers: Sequence[Any] | Any, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL, engine: Engine = DEFAULT_ENGINE
) -> RolloutResult:
    """κ of the rollout Π ½(I + A_l), the product of κ(½(I + A_l)), and the product bound.

    layers: a sequence of L matrices of shape (..., n, n), or an array (L, ..., n, n).
    """
    stack = _stack_layers(layers, row_sum_atol)
    kappa_B = kappa(0.5 * (np.eye(stack.shape[-1]) + stack), row_sum_atol, engine)
    kappa_A = kappa(stack, row_sum_atol, engine)
    return RolloutResult(
        kappa_rollout=_rollout_kappa(stack, row_sum_atol, engine),
        product_kappa_half=np.cumprod(np.asarray(kappa_B), axis=0),
        product_bound=np.cumprod(0.5 * (1.0 + np.asarray(kappa_A)), axis=0),
    )
