"""The values of docs/dynamics.md: the dynamics study's tables kept in docs/offline/dynamics/ and config.yaml."""

from __future__ import annotations

import json

import pandas as pd

from tools.documents.kept import DYNAMICS, PAPER_SUITE, benchmark_seconds, read_config
from tools.documents.wording import and_, at_most, minutes, pct, sig, sig_span, span


def dynamics_values() -> dict[str, str]:
    """Every ``{name}`` of docs/dynamics.in.md, from the dynamics study's tables kept in docs/offline/dynamics/
    and config.yaml."""
    config = read_config()
    specs = config["dynamics"]
    sims, albert_spec = specs["simulations"], specs["albert"]
    summary = pd.read_csv(DYNAMICS / "simulations.csv").set_index("experiment")
    stability = pd.read_csv(DYNAMICS / "stability.csv")
    basin = pd.read_csv(DYNAMICS / "basin.csv").set_index("radius")
    sweep = pd.read_csv(DYNAMICS / "beta_sweep.csv").sort_values("beta")
    steps = pd.read_csv(DYNAMICS / "albert_steps.csv").set_index("step")
    albert = json.loads((DYNAMICS / "albert.json").read_text())
    bench = pd.read_csv(DYNAMICS / "benchmarks.csv").set_index("step")
    v: dict[str, str] = {}

    v["consensus_n"] = str(sims["consensus"]["n"])
    v["consensus_sphere"] = str(int(summary.loc["consensus", "d"]) - 1)
    v["multihead_heads"] = str(sims["multihead"]["heads"])
    v["albert_steps"] = str(albert_spec["steps"])
    paper = albert_spec["suites"][PAPER_SUITE]
    v["albert_paper"] = f"{config['models'][paper['model']]['hub']['id']} on {paper['dataset']}"
    depth = int(albert["trained_depth"])
    v["albert_trained_depth"] = str(depth)
    ratio = albert_spec["steps"] / depth
    v["albert_depths"] = {1: "once", 2: "twice"}.get(ratio, f"{ratio:g} times")

    v["dynamics_time"] = minutes(benchmark_seconds("dynamics_offline"))
    v["simulate_time"] = minutes(bench.loc["simulate_dynamics", "s"])
    v["albert_time"] = minutes(bench.filter(like="unroll_albert/", axis=0)["s"].sum())
    v["albert_inputs"] = str(int(steps["inputs"].iloc[0]))

    consensus = stability[stability["equilibrium"] == "consensus"]
    v["radius_error"] = at_most((consensus["spectral_radius"] - consensus["predicted_radius"]).abs().max())
    v["radius_v1"] = ", ".join(f"{summary.loc[e, 'radius_v1']:.3f} {e}" for e in summary.index if e != "bipartite")
    top = consensus.groupby("experiment")["eigenvalue"].transform("max")
    v["radius_other"] = f"{sig_span(consensus.loc[consensus['eigenvalue'] < top, 'spectral_radius'], 3)}"
    # the bipartite experiment's displayed run starts at its split (rollout_equality.studies.dynamics.consensus); the others
    # start from a random state
    random = summary.drop(index="bipartite")
    v["random_runs"] = and_(list(random.index))
    v["random_corr"] = " / ".join(sorted({f"{x:.3f}" for x in random["final_abs_corr"]}))
    v["random_distance"] = " / ".join(sorted({f"{x:.3f}" for x in random["final_distance"]}))

    bip = sims["bipartite"]
    v["bipartite_n"] = str(bip["n"])
    v["bipartite_steps"] = str(bip["steps"])
    stable = sweep[sweep["stable"]]
    first = stable["beta"].min()
    shown = sweep[(sweep["beta"] <= first) & (sweep["beta"] >= sweep.loc[~sweep["stable"], "beta"].max())]
    shown = pd.concat([shown, sweep[sweep["beta"] == bip["beta"]]]).drop_duplicates()
    v["stable_beta"] = f"{first:g}"
    v["sweep_radii"] = ", ".join(f"{r.spectral_radius:.4g} at β = {r.beta:g}" for r in shown.itertuples())
    small = stable[stable["basin_radius"] > 0].iloc[0]
    v["small_beta"] = f"{small['beta']:g}"
    v["small_radius"] = f"{small['basin_radius']:g}"
    v["small_share"] = pct(small["uniform_bipartite"])
    v["beta"] = f"{bip['beta']:g}"
    radius = summary.loc["bipartite", "basin_radius"]  # the largest radius with at least half the runs back
    v["radius_one"] = f"{radius:g}"
    v["returned_at_one"] = pct(basin.loc[radius, "returned_rate"], 0)
    shares = [
        summary.loc["bipartite", "uniform_starts_bipartite"],
        *sweep.loc[sweep["beta"] == bip["beta"], "uniform_bipartite"],
    ]
    v["uniform_share"] = span(shares)
    v["uniform_starts"] = f"{bip['uniform_starts']:,}"
    last = sweep.iloc[-1]
    v["large_beta"] = f"{last['beta']:g}"
    v["large_share"] = pct(last["uniform_bipartite"], 0)

    v["albert_lambda1"] = f"{albert['lambda1']:.3f}"
    leading = albert["leading_eigenvalues"][0]
    if albert["dominant"]:
        v["albert_dominance"] = "is dominant"
    else:
        lead = "a complex pair leads" if leading[1] != 0 else f"{leading[0]:.3f} leads"
        v["albert_dominance"] = f"is not dominant: {lead}, as expected of random weights"
    v["albert_distance_0"] = f"{steps.loc[0, 'mean_distance']:.2f}"
    v["albert_distance_depth"] = f"{steps.loc[depth, 'mean_distance']:.2f}"
    v["albert_distance_last"] = f"{steps['mean_distance'].iloc[-1]:.2f}"
    v["albert_corr"] = sig_span(steps["mean_abs_corr"], 1)
    v["albert_kappa_depth"] = sig(steps.loc[depth, "kappa_rollout"], 1)
    v["albert_holds"] = span(steps["holds_rate"].dropna())
    return v
