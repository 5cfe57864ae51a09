"""Statistics of records: condition rates with Wilson 95% intervals, per model, per layer, per depth.

Pure functions of a records table (:mod:`rollout_equality.condition.records`); the claims
(:mod:`rollout_equality.reporting.claims`) and the tables (:mod:`rollout_equality.reporting.suite_tables`) read them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rollout_equality.condition.baseline import interval_row


def normalised_depth(layer, n_layers):
    """Layer ``layer`` (from 0) of a model of ``n_layers`` layers as a depth in [0, 1]: layer / (L − 1), 0 for a
    model of one layer. Scalars and arrays (numpy, pandas) alike; the tables and figures that place a layer by
    depth read it from here."""
    return layer / np.maximum(n_layers - 1, 1)


def _wilson_rows(groups, keys: list[str]) -> list[dict]:
    rows = []
    for key, g in groups:
        rows.append(
            {
                **dict(zip(keys, key)),
                "inputs": int(g["input_id"].nunique()),
                "pairs": len(g),
                **interval_row(int(g["holds"].sum()), len(g)),
                "agreement": float((g["holds"] == g["holds_direct"]).mean()),
            }
        )
    return rows


def layer_rates(records: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set, layer): inputs, holds, rate, Wilson 95% interval, agreement.

    ``agreement`` is the share of input-layer pairs where the characterisation
    and the direct computation agree. A row with layer = -1 pools all layers.
    """
    keys = ["model", "dataset", "token_set", "layer"]
    grouped = pd.concat([records, records.assign(layer=-1)]).groupby(keys, sort=True)
    df = pd.DataFrame(_wilson_rows(grouped, keys))
    df["n_layers"] = grouped["n_layers"].first().to_numpy()
    df["mean_n_tokens"] = grouped["n_tokens"].mean().to_numpy().astype(float)
    return df[keys + ["n_layers", "pairs", "holds", "rate", "ci_low", "ci_high", "agreement", "mean_n_tokens"]]


def with_seeds(rates: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """``rates`` (keyed by model and data set) with the records' ``seed`` column: the run's seed, <NA> for models
    that have none (:func:`rollout_equality.condition.records.run_seeds`)."""
    from rollout_equality.condition.records import run_seeds

    return rates.merge(run_seeds(records), on=["model", "dataset"], how="left").astype({"seed": "Int64"})


def model_rates(records: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set) over all input-layer pairs: rate, Wilson 95% interval, agreement."""
    keys = ["model", "dataset", "token_set"]
    return pd.DataFrame(_wilson_rows(records.groupby(keys, sort=True), keys))


def depth_rates(records: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set, layer): rate with its interval, and the normalised depth layer / (L − 1)."""
    keys = ["model", "dataset", "token_set", "layer"]
    df = pd.DataFrame(_wilson_rows(records.groupby(keys, sort=True), keys))
    n_layers = records.groupby(["model", "dataset"])["n_layers"].first()
    df["depth"] = [
        normalised_depth(layer, n_layers[(m, d)]) for m, d, layer in zip(df["model"], df["dataset"], df["layer"])
    ]
    return df


SPECIAL_TOKEN_COLUMNS = ["model", "dataset", "failing_all", "content_holds", "share", "ci_low", "ci_high"]


def special_token_shares(records: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset): of the input-layer pairs where the condition fails on all tokens
    (``failing_all``), how many hold once the special tokens are removed (``content_holds``), their
    ``share`` and its Wilson 95% interval. A share near 1 says the special tokens account for the failures.

    Pairs are matched on (input_id, layer). A (model, dataset) with no failing pair has ``failing_all`` 0 and no
    share; one without ``content`` or ``all`` records gives no row.
    """
    keys = ["model", "dataset", "input_id", "layer"]
    content = records[records["token_set"] == "content"][keys + ["holds"]]
    every = records[records["token_set"] == "all"][keys + ["holds"]]
    both = every.merge(content, on=keys, how="inner", suffixes=("_all", ""), validate="one_to_one")
    rows = []
    for (model, dataset), g in both.groupby(["model", "dataset"], sort=True):
        g = g[~g["holds_all"].astype(bool)]
        rows.append(
            {
                "model": model,
                "dataset": dataset,
                "failing_all": len(g),
                **interval_row(int(g["holds"].sum()), len(g), count="content_holds", share="share"),
            }
        )
    return pd.DataFrame(rows, columns=SPECIAL_TOKEN_COLUMNS)


def rollout_summary(rollout: pd.DataFrame, rtol: float = 1e-9) -> pd.DataFrame:
    """At the last depth, per (model, dataset, token set): medians of κ(rollout), Π κ(½(I+A)), Π ½(1+κ(A)).

    ``tight_half`` / ``tight_bound``: share of inputs whose rollout κ equals the product of
    layerwise κ(½(I+A)) / the product bound (within ``rtol`` relative).
    """
    last = rollout[rollout["depth"] == rollout["n_layers"] - 1]
    rows = []
    for (model, dataset, token_set), g in last.groupby(["model", "dataset", "token_set"], sort=True):
        rows.append(
            {
                "model": model,
                "dataset": dataset,
                "token_set": token_set,
                "inputs": len(g),
                "n_layers": int(g["n_layers"].iloc[0]),
                "kappa_rollout": float(g["kappa_rollout"].median()),
                "product_kappa_half": float(g["product_kappa_half"].median()),
                "product_bound": float(g["product_bound"].median()),
                "tight_half": float((g["kappa_rollout"] >= g["product_kappa_half"] * (1 - rtol)).mean()),
                "tight_bound": float((g["kappa_rollout"] >= g["product_bound"] * (1 - rtol)).mean()),
            }
        )
    return pd.DataFrame(rows)


def depth_profile(depth: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set): the rate of every layer in order, as one line of percentages."""
    rows = []
    for (model, dataset, token_set), g in depth.groupby(["model", "dataset", "token_set"], sort=True):
        rows.append(
            {
                "model": model,
                "dataset": dataset,
                "token_set": token_set,
                "rate by layer (%)": " ".join(f"{100 * r:.0f}" for r in g.sort_values("layer")["rate"]),
            }
        )
    return pd.DataFrame(rows)
