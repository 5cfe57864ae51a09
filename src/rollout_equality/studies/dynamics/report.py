"""Outputs of the dynamics study: simulation results on disk, their tables and figures, and the
ALBERT step table and figure (consensus and rollout contraction on one step axis)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from rollout_equality.config.paths import ALBERT_REPORT, SIMULATION_FIGURES, SIMULATION_REPORT
from rollout_equality.config.paths import SIMULATIONS as SIMULATION_FILES  # the files simulate_dynamics writes, by key
from rollout_equality.reporting.writers import write_csv, write_html, write_latex
from rollout_equality.runtime.files import atomic_path, progress, require_paths, write_json
from rollout_equality.studies.dynamics.consensus import EXPERIMENTS, run_experiment, split_share

BETA_SWEEP_COLUMNS = ["beta", "spectral_radius", "stable", "basin_radius", "uniform_bipartite"]


def simulate_dynamics(specs: dict, seed: int, out: Mapping[str, str | os.PathLike]) -> None:
    """Run the four experiments and write each of :data:`SIMULATION_FILES` to its path in ``out``."""
    require_paths(out, SIMULATION_FILES, "simulate_dynamics")
    missing = [name for name in EXPERIMENTS if name not in specs]
    if missing:
        raise ValueError(f"dynamics.simulations lacks the experiment(s) {', '.join(missing)}")
    results = {
        name: run_experiment(name, specs[name], seed) for name in progress(EXPERIMENTS, "simulations", "experiment")
    }
    # distances and κ decay to 1e-16: keep significant digits, not decimals
    write_csv(
        pd.concat([r["trajectory"] for r in results.values()], ignore_index=True),
        out["trajectory"],
        float_format="%.10g",
    )
    write_csv(
        pd.concat([r["stability"] for r in results.values()], ignore_index=True), out["stability"], float_format="%.10g"
    )
    write_csv(results["bipartite"]["basin"], out["basin"])
    write_csv(
        results["bipartite"].get("beta_sweep", pd.DataFrame(columns=BETA_SWEEP_COLUMNS)),
        out["beta_sweep"],
        float_format="%.10g",
    )
    write_json(out["info"], {k: r["info"] for k, r in results.items()})
    with atomic_path(out["tokens"]) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(
                fh,
                **{f"{k}_tokens": r["tokens"] for k, r in results.items()},
                **{f"{k}_v1": r["v1"] for k, r in results.items()},
            )


def simulation_summary(info: dict, stab: pd.DataFrame) -> pd.DataFrame:
    """One row per experiment: sizes, λ1, dominance, stability of consensus on v1 and on the
    next eigenvector, final alignment and spread, and the bipartite basin radius."""
    rows = []
    for name in EXPERIMENTS:
        i = info[name]
        cons = stab[(stab["experiment"] == name) & (stab["equilibrium"] == "consensus")].sort_values(
            "eigenvalue", ascending=False
        )
        rows.append(
            {
                "experiment": name,
                "n": i["n"],
                "d": i["d"],
                "heads": i["heads"],
                "lambda1": i["lambda1"],
                "radius_v1": cons["spectral_radius"].iloc[0],
                "radius_v2": cons["spectral_radius"].iloc[1] if len(cons) > 1 else np.nan,
                "final_abs_corr": i["final_mean_abs_corr"],
                "final_distance": i["final_mean_distance"],
                "basin_radius": i.get("basin_radius", np.nan),
                "uniform_starts_bipartite": split_share(i.get("uniform_starts")),
            }
        )
    return pd.DataFrame(rows)


def report_simulations(sim: Mapping[str, str | os.PathLike], out: Mapping[str, str | os.PathLike]) -> None:
    """From the simulations' files (``sim``, keys :data:`SIMULATION_FILES`): the summary CSV, the
    stability, basin and β-sweep LaTeX tables (``out``, keys :data:`SIMULATION_REPORT`), and one
    figure per experiment plus the basin figure (``out``: ``<name>_pdf``, ``<name>_png``)."""
    from rollout_equality.reporting import figures

    require_paths(sim, SIMULATION_FILES, "report_simulations")
    require_paths(
        out,
        [*SIMULATION_REPORT, *SIMULATION_FIGURES],
        "report_simulations",
    )
    info = json.loads(Path(sim["info"]).read_text())
    stab = pd.read_csv(sim["stability"])
    summary = simulation_summary(info, stab)
    write_csv(summary, out["summary"])
    write_html(summary, out["summary_html"], "Simulations: one row per experiment")
    write_latex(
        stab.drop(columns=["residual"]),
        out["stability"],
        str(sim["stability"]),
        formats={"eigenvalue": "{:.3f}", "spectral_radius": "{:.4f}", "predicted_radius": "{:.4f}"},
    )
    basin = pd.read_csv(sim["basin"])
    write_latex(basin, out["basin"], str(sim["basin"]), formats={"radius": "{:.2f}", "returned_rate": "{:.3f}"})
    sweep = pd.read_csv(sim["beta_sweep"])
    write_latex(
        sweep,
        out["sweep"],
        str(sim["beta_sweep"]),
        formats={
            "beta": "{:.2f}",
            "spectral_radius": "{:.4f}",
            "basin_radius": "{:.2f}",
            "uniform_bipartite": "{:.3f}",
        },
    )
    traj = pd.read_csv(sim["trajectory"])
    with np.load(sim["tokens"]) as tokens:
        for name in EXPERIMENTS:
            fig = trajectory_figure(
                tokens[f"{name}_tokens"], tokens[f"{name}_v1"], traj[traj["experiment"] == name], info[name]
            )
            figures.write_figure(fig, out[f"{name}_pdf"], out[f"{name}_png"])
    figures.write_figure(basin_figure(basin, sweep, info["bipartite"]), out["basin_pdf"], out["basin_png"])


def trajectory_figure(tokens: np.ndarray, v1: np.ndarray, traj: pd.DataFrame, info: dict):
    """Left: tokens on S² with v1 (d = 3) or |corr(x_i, v1)| of every token (d > 3).
    Right: spread, misalignment 1 − mean |corr| and κ of the rollout on one log axis."""
    import matplotlib.pyplot as plt

    from rollout_equality.studies.dynamics.sphere import alignment

    fig = plt.figure(figsize=(9.0, 3.6))
    title = (
        f"{info['experiment']}: n={info['n']}, d={info['d']}, H={info['heads']}, "
        f"η={info['eta']:g}, β={info['beta']:g}, λ1={info['lambda1']:.3g}"
    )
    if tokens.shape[-1] == 3:
        ax = fig.add_subplot(1, 2, 1, projection="3d")
        u, w = np.mgrid[0 : 2 * np.pi : 40j, 0 : np.pi : 20j]
        ax.plot_wireframe(np.cos(u) * np.sin(w), np.sin(u) * np.sin(w), np.cos(w), color="0.85", linewidth=0.3)
        for i in range(tokens.shape[1]):
            ax.plot(*tokens[:, i].T, linewidth=0.9)
            ax.scatter(*tokens[0, i], s=8, color="0.3")
        for sign in (1, -1):
            ax.scatter(*(sign * v1), s=60, marker="*", color="k")
        ax.set_box_aspect((1, 1, 1))
        ax.set_axis_off()
    else:
        ax = fig.add_subplot(1, 2, 1)
        ax.plot(np.abs(alignment(tokens, v1)), linewidth=0.8)
        ax.set_xlabel("step")
        ax.set_ylabel("|corr(x_i, v1)|")
        ax.set_ylim(0, 1.02)
    ax2 = fig.add_subplot(1, 2, 2)
    floor = 1e-16
    ax2.semilogy(traj["step"], np.maximum(traj["mean_distance"], floor), label="mean pairwise distance")
    ax2.semilogy(traj["step"], np.maximum(1 - traj["mean_abs_corr"], floor), label="1 − mean |corr(x_i, v1)|")
    ax2.semilogy(traj["step"], np.maximum(traj["kappa_rollout"], floor), label="κ(rollout up to t)")
    ax2.semilogy(traj["step"], np.maximum(traj["kappa"], floor), label="κ(A_t)", linestyle=":")
    ax2.set_xlabel("step t")
    ax2.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    return fig


def basin_figure(basin: pd.DataFrame, sweep: pd.DataFrame, info: dict):
    """Left: where perturbed bipartite states end, against the geodesic perturbation radius.
    Right (when the β sweep ran): the split's linear stability and basin against β."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2 if len(sweep) else 1, figsize=(9.0 if len(sweep) else 5.0, 3.2), squeeze=False)
    ax = axes[0, 0]
    bottom = np.zeros(len(basin))
    positions = np.arange(len(basin))
    for kind in ("returned", "bipartite", "consensus", "other"):
        share = basin[kind] / basin["trials"]
        ax.bar(positions, share, bottom=bottom, width=0.8, label=kind)
        bottom += share
    ax.set_xticks(positions, [f"{r:g}" for r in basin["radius"]], fontsize=7)
    ax.set_xlabel("perturbation radius (rad, every token)")
    ax.set_ylabel("fraction of runs")
    ax.set_title(f"±v1 split, n={info['n']}, β={info['beta']:g}: basin radius ≈ {info['basin_radius']:.2f}", fontsize=9)
    ax.legend(fontsize=7)
    if len(sweep):
        ax2 = axes[0, 1]
        ax2.plot(sweep["beta"], sweep["spectral_radius"], marker="o", label="spectral radius (linearised)")
        ax2.axhline(1.0, color="0.6", linewidth=0.8, linestyle="--")
        ax2.plot(sweep["beta"], sweep["basin_radius"], marker="s", label="basin radius (rad)")
        ax2.plot(sweep["beta"], sweep["uniform_bipartite"], marker="^", label="random starts ending split")
        ax2.set_xlabel("β (inverse temperature)")
        ax2.legend(fontsize=7)
        ax2.set_title("stability of the split against β", fontsize=9)
    fig.tight_layout()
    return fig


def report_albert(records_path, info_path, out: Mapping[str, str | os.PathLike], table_steps) -> None:
    """Per-step table (CSV at ``out["steps"]``, LaTeX at ``out["tex"]`` for the steps in ``table_steps``)
    and the step figure (``out["pdf"]``, ``out["png"]``)."""
    from rollout_equality.reporting import figures
    from rollout_equality.studies.dynamics.albert import summarise

    require_paths(out, ALBERT_REPORT, "report_albert")
    records = pd.read_parquet(records_path)
    info = json.loads(Path(info_path).read_text())
    steps = summarise(records)
    write_csv(steps, out["steps"], float_format="%.10g")
    write_html(
        steps, out["steps_html"], f"ALBERT's shared layer unrolled: per step ({info.get('model', {}).get('name', '')})"
    )
    shown = steps[steps["step"].isin(list(table_steps))]
    write_latex(
        shown,
        out["tex"],
        str(records_path),
        formats={
            c: "{:.4f}"
            for c in ("mean_distance", "mean_abs_corr", "min_abs_corr", "kappa", "kappa_rollout", "holds_rate")
        },
    )
    figures.write_figure(albert_figure(steps, info), out["pdf"], out["png"])


def albert_figure(steps: pd.DataFrame, info: dict):
    """Consensus (token spread, alignment with v1) beside attention contraction (κ(A_t), κ of the
    rollout) against the number of applications of the shared layer."""
    import matplotlib.pyplot as plt

    s = steps[steps["step"] >= 1]
    fig, (ax, ax2) = plt.subplots(1, 2, figsize=(9.0, 3.4))
    ax.plot(steps["step"], steps["mean_distance"], marker=".", label="mean pairwise distance (normalised tokens)")
    ax.plot(steps["step"], steps["mean_abs_corr"], marker=".", label="mean |corr(x_i, v1)|")
    ax.plot(s["step"], s["kappa"], marker=".", label="κ(A_t)")
    ax.plot(s["step"], s["holds_rate"], marker=".", linestyle=":", label="equality condition holds")
    ax2.semilogy(steps["step"], steps["mean_distance"], marker=".", label="mean pairwise distance")
    ax2.semilogy(s["step"], np.maximum(s["kappa_rollout"], 1e-16), marker=".", label="κ(rollout up to t)")
    for a in (ax, ax2):
        a.axvline(info["trained_depth"], color="0.6", linewidth=0.8, linestyle="--")
        a.set_xlabel("applications of the shared layer t")
        a.legend(fontsize=7)
    ax.set_ylim(bottom=0)
    fig.suptitle(
        f"ALBERT, {int(steps['inputs'].max())} inputs: λ1(W_O W_V) = {info['lambda1']:.3g}"
        f"{'' if info['dominant'] else ' (not dominant)'}; dashed: trained depth",
        fontsize=9,
    )
    fig.tight_layout()
    return fig
