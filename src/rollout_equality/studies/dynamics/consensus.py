"""The four simulation experiments of the dynamics study (config ``dynamics.simulations``).

Each experiment builds its heads from a seeded generator, runs the dynamics and returns tables:

- ``consensus``   one head, symmetric F with a dominant positive eigenvalue; tokens reach ±v1.
- ``bipartite``   tokens at ±v1 split in two clusters: the equilibrium's linear stability and the
                  fraction of perturbations of each geodesic radius that come back to it.
- ``multihead``   H heads with their own M_h, F_h; consensus follows v1 of the layer matrix Σ_h F_h.
- ``asymmetric``  non-symmetric F with a real dominant eigenvalue beside a complex pair.

Per step (``trajectory`` table): mean pairwise distance, mean and min |corr(x_i, v1)|, κ of the
head-averaged attention and κ of the rollout Π ½(I + A_t) up to that step. Per real eigenvector
(``stability`` table): the consensus fixed point's residual, the spectral radius of the measured
tangent Jacobian and the predicted one. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd

from rollout_equality.condition.dobrushin import kappa
from rollout_equality.runtime.files import progress
from rollout_equality.studies.dynamics import sphere as dy

log = logging.getLogger(__name__)

EXPERIMENTS = ("consensus", "bipartite", "multihead", "asymmetric")


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(EXPERIMENTS.index(name),)))


def build_heads(spec: dict, rng: np.random.Generator) -> dy.Heads:
    """Heads from an experiment's spec.

    ``F``: ``{symmetric: [λ...]}`` or ``{real: [λ...], complex: [[a, b], ...]}`` (the layer matrix);
    ``heads`` > 1 splits it into F/H + R_h with random R_h summing to zero, so that no single head
    carries the layer's principal eigenvector. ``M``: ``identity`` or ``random`` (Gaussian / √d, per head).
    """
    F_spec, H = spec["F"], int(spec["heads"])
    if "symmetric" in F_spec:
        F = dy.symmetric_matrix(F_spec["symmetric"], rng)
    else:
        F = dy.matrix_with_eigenvalues(F_spec.get("real", []), F_spec.get("complex", []), rng, F_spec["condition"])
    d = F.shape[0]
    if H == 1:
        Fh = F[None]
    else:
        R = rng.standard_normal((H, d, d)) * spec["head_spread"] / np.sqrt(d)
        Fh = F / H + R - R.mean(axis=0)
    if spec["M"] == "identity":
        M = np.tile(np.eye(d), (H, 1, 1))
    else:
        M = rng.standard_normal((H, d, d)) / np.sqrt(d)
    return dy.Heads(M, Fh)


def trajectory_table(traj: np.ndarray, attn: np.ndarray, v1: np.ndarray) -> pd.DataFrame:
    """Per-step summary of one run: traj (T+1, n, d), attn (T, H, n, n)."""
    A = attn.mean(axis=1)
    return dy.step_table(traj, A, v1, kappa(A) if len(A) else np.empty(0))


def stability_table(heads: dy.Heads, eta: float, beta: float, n: int, name: str) -> pd.DataFrame:
    """For consensus (and, for one head, the ±v bipartite split) on every real eigenvector of F."""
    F = dy.layer_matrix(heads)
    values, vectors = np.linalg.eig(F)
    rows = []
    real = np.flatnonzero(np.abs(values.imag) <= 1e-9 * max(1.0, np.abs(values).max()))
    for k in real[np.argsort(-values[real].real)]:
        v = vectors[:, k].real
        states = {"consensus": dy.consensus(v, n)}
        if heads.n_heads == 1:
            states["bipartite"] = dy.bipartite(v, n - n // 2, n // 2)
        for kind, X in states.items():
            Y, _ = dy.step(X, heads, eta, beta)
            radius = dy.spectral_radius(dy.tangent_jacobian(X, heads, eta, beta))
            predicted = dy.consensus_spectrum(F, k, eta).max() if kind == "consensus" else np.nan
            rows.append(
                {
                    "experiment": name,
                    "equilibrium": kind,
                    "eigenvalue": float(values[k].real),
                    "residual": float(np.abs(Y - X).max()),
                    "spectral_radius": radius,
                    "predicted_radius": float(predicted),
                    "stable": bool(radius < 1),
                }
            )
    return pd.DataFrame(rows)


OUTCOMES = ("returned", "bipartite", "consensus", "other")


def outcome_counts(ends: np.ndarray) -> dict[str, int]:
    """How many runs ended in each of :data:`OUTCOMES` (labels from :func:`rollout_equality.studies.dynamics.sphere.classify`)."""
    return {kind: int((ends == kind).sum()) for kind in OUTCOMES}


def split_share(counts: dict[str, int] | None) -> float:
    """Share of runs that ended in some bipartite split, the reference's included (NaN without runs)."""
    if not counts:
        return np.nan
    return (counts["returned"] + counts["bipartite"]) / sum(counts.values())


def basin_size(
    heads: dy.Heads, ref: np.ndarray, v1: np.ndarray, spec: dict, eta: float, beta: float, rng: np.random.Generator
) -> tuple[pd.DataFrame, float, dict | None]:
    """Where perturbations of the bipartite state ``ref`` end, per geodesic radius in ``spec["radii"]``
    (``spec["trials"]`` runs of ``spec["steps"]`` steps each); the basin radius (largest radius with
    at least half the runs back); and, with ``spec["uniform_starts"]``, where runs from uniformly
    random states end (the basin's share of the whole state space)."""
    steps, tol = int(spec["steps"]), float(spec["tol"])
    rows = []
    for radius in spec["radii"]:
        starts = dy.perturb(ref, float(radius), rng, size=int(spec["trials"]))
        final, _ = dy.simulate(starts, heads, eta, beta, steps)
        ends = dy.classify(final[-1], ref, v1, tol)
        counts = outcome_counts(ends)
        rows.append({"radius": float(radius), "trials": int(spec["trials"]), **counts})
    basin = pd.DataFrame(rows)
    basin["returned_rate"] = basin["returned"] / basin["trials"]
    back = basin.loc[basin["returned_rate"] >= 0.5, "radius"]
    uniform = None
    if spec["uniform_starts"]:
        starts = rng.standard_normal((int(spec["uniform_starts"]),) + ref.shape)
        final, _ = dy.simulate(starts, heads, eta, beta, steps)
        ends = dy.classify(final[-1], ref, v1, tol)
        uniform = outcome_counts(ends)
    return basin, (float(back.max()) if len(back) else 0.0), uniform


def run_experiment(name: str, spec: dict, seed: int) -> dict[str, pd.DataFrame | np.ndarray | dict]:
    """Run one experiment: tables ``trajectory``, ``stability`` (and ``basin`` for bipartite),
    the token trajectory of the displayed run, and ``info`` (eigenvalues, v1, dominance)."""
    if name not in EXPERIMENTS:
        raise ValueError(f"unknown dynamics experiment {name!r}; known: {', '.join(EXPERIMENTS)}")
    rng = _rng(seed, name)
    heads = build_heads(spec, rng)
    eta, beta, n, steps = float(spec["eta"]), float(spec["beta"]), int(spec["n"]), int(spec["steps"])
    F = dy.layer_matrix(heads)
    principal = dy.principal_eigenpair(F, eta)
    v1 = principal["vector"]
    if not principal["dominant"]:
        log.warning(
            "%s: λ1 = %.4g is not strictly dominant (gap %.3g): consensus on v1 is not predicted to be stable",
            name,
            principal["value"],
            principal["gap"],
        )
    info = {
        "experiment": name,
        "n": n,
        "d": heads.dim,
        "heads": heads.n_heads,
        "eta": eta,
        "beta": beta,
        "lambda1": principal["value"],
        "dominant": principal["dominant"],
        "gap": principal["gap"],
        "eigenvalues": [[float(z.real), float(z.imag)] for z in principal["eigenvalues"]],
    }
    out: dict = {"stability": stability_table(heads, eta, beta, n, name), "info": info}

    if name == "bipartite":
        ref = dy.bipartite(v1, n - n // 2, n // 2)
        X0 = dy.perturb(ref, float(spec["radii"][0]), rng)
        basin, info["basin_radius"], uniform = basin_size(heads, ref, v1, spec, eta, beta, rng)
        out["basin"] = basin
        if uniform is not None:
            info["uniform_starts"] = uniform
        if spec["betas"]:  # where the split becomes stable, and how its basin grows
            rows = []
            for b in progress(spec["betas"], desc="bipartite β sweep", unit="β"):
                radius = dy.spectral_radius(dy.tangent_jacobian(ref, heads, eta, float(b)))
                _, basin_radius, counts = basin_size(heads, ref, v1, spec, eta, float(b), rng)
                rows.append(
                    {
                        "beta": float(b),
                        "spectral_radius": radius,
                        "stable": bool(radius < 1),
                        "basin_radius": basin_radius,
                        "uniform_bipartite": split_share(counts),
                    }
                )
            out["beta_sweep"] = pd.DataFrame(rows)
    else:
        X0 = rng.standard_normal((n, heads.dim))
    traj, attn = dy.simulate(X0, heads, eta, beta, steps)
    out["trajectory"] = trajectory_table(traj, attn, v1).assign(experiment=name)
    out["tokens"] = traj
    out["v1"] = v1
    info["final_mean_abs_corr"] = float(out["trajectory"]["mean_abs_corr"].iloc[-1])
    info["final_mean_distance"] = float(out["trajectory"]["mean_distance"].iloc[-1])
    if heads.n_heads > 1:  # how far consensus is from each head's own principal vector
        own = [dy.principal_eigenpair(F_h, eta)["vector"] for F_h in heads.F]
        info["heads_abs_corr_with_v1"] = [float(abs(u @ v1)) for u in own]
    return out
