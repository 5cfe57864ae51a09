"""Discrete-time self-attention dynamics of tokens on the unit sphere.

One step of the dynamics, for tokens x_1..x_n in R^d with ‖x_i‖ = 1:

    x_i(t+1) = normalise( x_i(t) + η Σ_h Σ_j A^h_ij(x(t)) F_h x_j(t) ),
    A^h_ij(x) = softmax_j( β x_iᵀ M_h x_j ),

with step size η, inverse temperature β, query/key matrix M_h = Q_hᵀ K_h and value matrix F_h of
head h (for a transformer layer F_h = W_O^h W_V^h). The layer matrix is F = Σ_h F_h.

At consensus (all x_i = v) the attention is uniform and the update is (I + ηF)v, so consensus on v
is a fixed point exactly when v is an eigenvector of F with a real eigenvalue λ, 1 + ηλ > 0.
Linearising there: deviations from the token mean shrink by 1/(1 + ηλ) per step, and the mean
moves on the sphere by (I + ηF)/(1 + ηλ) restricted to the quotient by v. Consensus on v1 is
locally asymptotically stable when λ1 is real, positive and |1 + ηλ_k| < 1 + ηλ1 for every other
eigenvalue; consensus on another eigenvector is unstable. :func:`consensus_spectrum` gives these
predicted multipliers, :func:`tangent_jacobian` measures them.

Arrays: tokens ``X`` have shape (..., n, d) (leading dimensions batch independent runs); a
:class:`Heads` holds ``M`` and ``F`` of shape (H, d, d). Everything is float64 numpy.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rollout_equality.condition.dobrushin import DEFAULT_ROW_SUM_ATOL, rollout_kappa

__all__ = [
    "Heads",
    "attention",
    "step",
    "simulate",
    "layer_matrix",
    "heads_from_projections",
    "principal_eigenpair",
    "consensus",
    "bipartite",
    "consensus_spectrum",
    "tangent_jacobian",
    "spectral_radius",
    "perturb",
    "mean_pairwise_distance",
    "alignment",
    "classify",
    "step_table",
    "symmetric_matrix",
    "matrix_with_eigenvalues",
]


@dataclass(frozen=True)
class Heads:
    """Query/key matrices ``M`` (H, d, d) and value matrices ``F`` (H, d, d) of H heads."""

    M: np.ndarray
    F: np.ndarray

    def __post_init__(self):
        M = np.asarray(self.M, dtype=np.float64)
        F = np.asarray(self.F, dtype=np.float64)
        if M.ndim == 2:
            M = M[None]
        if F.ndim == 2:
            F = F[None]
        if M.ndim != 3 or M.shape[1] != M.shape[2]:
            raise ValueError(f"query/key matrices M must have shape (H, d, d) or (d, d), got {M.shape}")
        if F.shape != M.shape:
            raise ValueError(f"value matrices F {F.shape} must have the shape of the query/key matrices M {M.shape}")
        if not (np.isfinite(M).all() and np.isfinite(F).all()):
            raise ValueError("M and F must be finite")
        object.__setattr__(self, "M", M)
        object.__setattr__(self, "F", F)

    @property
    def n_heads(self) -> int:
        return self.M.shape[0]

    @property
    def dim(self) -> int:
        return self.M.shape[1]


def _check_tokens(X, heads: Heads) -> np.ndarray:
    X = np.asarray(X, dtype=np.float64)
    if X.ndim < 2 or X.shape[-1] != heads.dim:
        raise ValueError(f"tokens must have shape (..., n, {heads.dim}), got {X.shape}")
    return X


def _normalise(Y: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(Y, axis=-1, keepdims=True)
    if (norms < 1e-300).any():
        raise FloatingPointError("a token reached the origin: the step size is too large for this F")
    return Y / norms


def attention(X, heads: Heads, beta: float) -> np.ndarray:
    """Attention of every head at state X: shape (..., H, n, n), rows summing to 1."""
    X = _check_tokens(X, heads)
    logits = beta * np.einsum("...id,hde,...je->...hij", X, heads.M, X)
    logits -= logits.max(axis=-1, keepdims=True)
    weights = np.exp(logits)
    return weights / weights.sum(axis=-1, keepdims=True)


def step(X, heads: Heads, eta: float, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """One step: (next state (..., n, d), attention of the current state (..., H, n, n))."""
    X = _check_tokens(X, heads)
    A = attention(X, heads, beta)
    FX = np.einsum("hde,...je->...hjd", heads.F, X)  # F_h x_j
    update = np.einsum("...hij,...hjd->...id", A, FX)
    return _normalise(X + eta * update), A


def simulate(X0, heads: Heads, eta: float, beta: float, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Run ``steps`` steps from X0 (projected onto the sphere).

    Returns the trajectory (steps + 1, ..., n, d) and the attention of each step (steps, ..., H, n, n).
    """
    if steps < 0:
        raise ValueError(f"steps must be >= 0, got {steps}")
    X = _normalise(_check_tokens(X0, heads))
    states, attn = [X], []
    for _ in range(steps):
        X, A = step(X, heads, eta, beta)
        states.append(X)
        attn.append(A)
    shape = X.shape[:-2] + (heads.n_heads,) + (X.shape[-2],) * 2
    return np.stack(states), (np.stack(attn) if attn else np.empty((0,) + shape))


def layer_matrix(heads: Heads) -> np.ndarray:
    """F = Σ_h F_h, the matrix that acts at consensus."""
    return heads.F.sum(axis=0)


def heads_from_projections(W_q, W_k, W_v, W_o, n_heads: int) -> Heads:
    """Per-head M_h = W_q^hᵀ W_k^h and F_h = W_O^h W_V^h from a layer's projection weights.

    ``W_q``, ``W_k``, ``W_v`` have shape (H·d_h, D) (torch ``Linear.weight`` layout: out × in) and
    ``W_o`` (D, H·d_h); head h owns rows h·d_h:(h+1)·d_h of W_q, W_k, W_v and the same columns of W_o.
    The attention scale 1/√d_h is left to β.
    """
    W_q, W_k, W_v, W_o = (np.asarray(w, dtype=np.float64) for w in (W_q, W_k, W_v, W_o))
    inner, D = W_v.shape
    if inner % n_heads:
        raise ValueError(f"the value projection's {inner} outputs do not split into {n_heads} heads")
    if W_q.shape != W_v.shape or W_k.shape != W_v.shape or W_o.shape != (D, inner):
        raise ValueError(
            f"projection shapes disagree: W_q {W_q.shape}, W_k {W_k.shape}, W_v {W_v.shape}, W_o {W_o.shape}"
        )
    dh = inner // n_heads
    sl = [slice(h * dh, (h + 1) * dh) for h in range(n_heads)]
    M = np.stack([W_q[s].T @ W_k[s] for s in sl])
    F = np.stack([W_o[:, s] @ W_v[s] for s in sl])
    return Heads(M, F)


def principal_eigenpair(F, eta: float = 1.0, imag_tol: float = 1e-9) -> dict:
    """The eigenpair that governs consensus: the eigenvalue with the largest |1 + ηλ|.

    Returns ``{"value", "vector" (unit, real, sign fixed so its largest entry is positive),
    "dominant" (1 + ηλ > 0 and strictly larger than |1 + ηλ_k| for all other eigenvalues),
    "gap" (1 + ηλ1 − max_k |1 + ηλ_k|), "eigenvalues"}``. Only real eigenvalues are candidates:
    when a complex pair leads, the real eigenvalue with the largest |1 + ηλ| is returned with
    ``dominant`` False (no consensus is stable then).
    """
    F = np.asarray(F, dtype=np.float64)
    if F.ndim != 2 or F.shape[0] != F.shape[1]:
        raise ValueError(f"F must be square, got shape {F.shape}")
    values, vectors = np.linalg.eig(F)
    scale = max(1.0, np.abs(values).max())
    is_real = np.abs(values.imag) <= imag_tol * scale
    growth = np.abs(1 + eta * values)
    if not is_real.any():
        raise ValueError("F has no real eigenvalue: no consensus fixed point exists")
    real_idx = np.flatnonzero(is_real)
    k = real_idx[np.argmax(growth[real_idx])]
    lam = float(values[k].real)
    v = vectors[:, k].real
    v = v / np.linalg.norm(v)
    if v[np.argmax(np.abs(v))] < 0:
        v = -v
    others = np.delete(growth, k)
    gap = (1 + eta * lam) - (others.max() if others.size else 0.0)
    return {
        "value": lam,
        "vector": v,
        "dominant": bool(1 + eta * lam > 0 and gap > 0),
        "gap": float(gap),
        "eigenvalues": values,
    }


def consensus(v, n: int) -> np.ndarray:
    """n tokens at the unit vector along v: shape (n, d)."""
    v = np.asarray(v, dtype=np.float64)
    return np.tile(v / np.linalg.norm(v), (n, 1))


def bipartite(v, n_plus: int, n_minus: int) -> np.ndarray:
    """n_plus tokens at v̂ and n_minus at −v̂: shape (n_plus + n_minus, d)."""
    v = np.asarray(v, dtype=np.float64)
    v = v / np.linalg.norm(v)
    return np.concatenate([np.tile(v, (n_plus, 1)), np.tile(-v, (n_minus, 1))])


def consensus_spectrum(F, lam_index: int, eta: float) -> np.ndarray:
    """Predicted multipliers of the linearised map at consensus on the eigenvector ``lam_index``.

    |multipliers| over the tangent space: 1/|1 + ηλ| (token differences) and
    |1 + ηλ_k|/(1 + ηλ) for the other eigenvalues λ_k (the mean), as one sorted array
    of distinct values.
    """
    values = np.linalg.eigvals(np.asarray(F, dtype=np.float64))
    lam = values[lam_index]
    rest = np.delete(values, lam_index)
    return np.sort(np.abs(np.concatenate([[1 / (1 + eta * lam)], (1 + eta * rest) / (1 + eta * lam)])))


def _tangent_basis(x: np.ndarray) -> np.ndarray:
    """An orthonormal basis (d−1, d) of the tangent space of the sphere at x."""
    d = x.shape[0]
    q, _ = np.linalg.qr(np.column_stack([x, np.eye(d)]))
    return q[:, 1:d].T


def tangent_jacobian(X, heads: Heads, eta: float, beta: float, eps: float = 1e-6) -> np.ndarray:
    """Jacobian of one step at X in tangent coordinates (central differences): (n(d−1), n(d−1)).

    Meaningful at a fixed point, where input and output tangent spaces coincide.
    """
    X = _normalise(_check_tokens(X, heads))
    if X.ndim != 2:
        raise ValueError("tangent_jacobian takes one state of shape (n, d)")
    n, d = X.shape
    bases = [_tangent_basis(x) for x in X]
    Y0, _ = step(X, heads, eta, beta)
    out_bases = [_tangent_basis(y) for y in Y0]
    J = np.zeros((n * (d - 1), n * (d - 1)))
    for i in range(n):
        for a in range(d - 1):
            cols = []
            for sign in (1, -1):
                Xp = X.copy()
                Xp[i] = np.cos(eps) * X[i] + np.sin(sign * eps) * bases[i][a]
                Y, _ = step(Xp, heads, eta, beta)
                cols.append(np.concatenate([out_bases[k] @ Y[k] for k in range(n)]))
            J[:, i * (d - 1) + a] = (cols[0] - cols[1]) / (2 * eps)
    return J


def spectral_radius(J) -> float:
    return float(np.abs(np.linalg.eigvals(J)).max())


def perturb(X, radius: float, rng: np.random.Generator, size: int | None = None) -> np.ndarray:
    """Move every token of X along a random tangent direction by the geodesic angle ``radius``.

    With ``size``, returns ``size`` independent perturbations stacked: (size, n, d).
    """
    X = np.asarray(X, dtype=np.float64)
    shape = ((size,) if size is not None else ()) + X.shape
    U = rng.standard_normal(shape)
    U -= (U * X).sum(-1, keepdims=True) * X
    U /= np.linalg.norm(U, axis=-1, keepdims=True)
    return np.cos(radius) * X + np.sin(radius) * U


def mean_pairwise_distance(X) -> np.ndarray:
    """Mean of ‖x̂_i − x̂_j‖ over pairs i < j of the normalised tokens: shape (...).

    Computed from differences (scipy's pdist), accurate down to distances of 1e-16.
    """
    from scipy.spatial.distance import pdist

    X = np.asarray(X, dtype=np.float64)
    X = X / np.linalg.norm(X, axis=-1, keepdims=True)
    if X.shape[-2] < 2:
        raise ValueError("a pairwise distance needs at least two tokens")
    flat = X.reshape((-1,) + X.shape[-2:])
    return np.array([pdist(x).mean() for x in flat]).reshape(X.shape[:-2])


def alignment(X, v) -> np.ndarray:
    """corr(x_i, v) = cosine between each token and v: shape (..., n)."""
    X = np.asarray(X, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64)
    return (X @ v) / (np.linalg.norm(X, axis=-1) * np.linalg.norm(v))


def classify(X, reference, v, tol: float) -> np.ndarray:
    """Where runs ended, per run of X (..., n, d):

    'returned' (every token within ``tol`` of the reference state), 'bipartite' (every token
    within ``tol`` of ±v̂, both signs present, another split than the reference), 'consensus'
    (all tokens within ``tol`` of each other) or 'other' (none of these yet).
    """
    X = np.asarray(X, dtype=np.float64)
    v = np.asarray(v, dtype=np.float64) / np.linalg.norm(v)
    returned = np.linalg.norm(X - reference, axis=-1).max(axis=-1) <= tol
    G = np.einsum("...id,...jd->...ij", X, X)
    spread = np.sqrt(np.clip(2 - 2 * G, 0, None)).max(axis=(-1, -2))
    plus = np.linalg.norm(X - v, axis=-1) <= tol
    minus = np.linalg.norm(X + v, axis=-1) <= tol
    split = (plus | minus).all(axis=-1) & plus.any(axis=-1) & minus.any(axis=-1)
    return np.select([returned, spread <= tol, split], ["returned", "consensus", "bipartite"], "other")


def step_table(
    states: np.ndarray, A: np.ndarray, v1: np.ndarray, kappa_A: np.ndarray, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL
) -> pd.DataFrame:
    """Per step of one run: states (T+1, n, d), head-averaged attentions A (T, n, n) and their κ (T,).

    Columns step, mean_distance, mean and min |corr(x_i, v1)|, κ(A_t) and κ of the rollout
    Π ½(I + A_s) up to t (NaN at step 0, which has no attention).
    """
    corr = np.abs(alignment(states, v1))
    nan = np.array([np.nan])
    kr = rollout_kappa(A, row_sum_atol) if len(A) else np.empty(0)
    return pd.DataFrame(
        {
            "step": np.arange(len(states)),
            "mean_distance": mean_pairwise_distance(states),
            "mean_abs_corr": corr.mean(axis=1),
            "min_abs_corr": corr.min(axis=1),
            "kappa": np.concatenate([nan, np.asarray(kappa_A, dtype=float).reshape(-1)]),
            "kappa_rollout": np.concatenate([nan, kr]),
        }
    )


def _orthogonal(d: int, rng: np.random.Generator) -> np.ndarray:
    q, r = np.linalg.qr(rng.standard_normal((d, d)))
    return q * np.sign(np.diag(r))


def symmetric_matrix(eigenvalues, rng: np.random.Generator) -> np.ndarray:
    """V diag(λ) Vᵀ with a random orthogonal V (Haar)."""
    lam = np.asarray(eigenvalues, dtype=np.float64)
    V = _orthogonal(lam.size, rng)
    return (V * lam) @ V.T


def matrix_with_eigenvalues(real, complex_pairs, rng: np.random.Generator, condition: float = 3.0) -> np.ndarray:
    """A non-symmetric real matrix P diag-blocks P⁻¹ with the given real eigenvalues and complex
    pairs (a ± bi given as [a, b]); P is a random matrix with singular values in [1, condition]."""
    blocks = [np.array([[x]]) for x in real] + [np.array([[a, -b], [b, a]]) for a, b in complex_pairs]
    d = sum(b.shape[0] for b in blocks)
    J = np.zeros((d, d))
    k = 0
    for b in blocks:
        m = b.shape[0]
        J[k : k + m, k : k + m] = b
        k += m
    s = np.linspace(1.0, condition, d)
    P = (_orthogonal(d, rng) * s) @ _orthogonal(d, rng)
    return P @ J @ np.linalg.inv(P)
