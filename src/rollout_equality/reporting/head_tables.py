"""The per-head and fusion tables and the heads × layers figure of a suite (rule write_head_tables).

They read the heads files (:mod:`rollout_equality.condition.heads`) beside the head-averaged records, which they leave as they
are: every other table, figure and the claims are the same bytes whether a suite measures heads or not.

* ``head_rates``: per (model, data set, token set), the share of (input, layer, head) triples where the condition
  holds on the head's own attention, with its Wilson 95% interval;
* ``head_agreement``: per (model, data set, token set), of the (input, layer) pairs, how often the head-averaged
  matrix holds while some head fails (``mean_holds_head_fails``: averaging makes the rows similar enough) and how
  often it fails while every head holds (``mean_fails_heads_hold``);
* ``fusion_rates``: per (model, data set, token set, fusion), the rate over (input, layer) pairs with its interval,
  and at the last depth the medians of the rollout's κ and of its product bound (``mean``: the head-averaged
  records, the paper's fusion).
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np
import pandas as pd

from rollout_equality.condition.baseline import interval_row
from rollout_equality.config.paths import HEAD_TABLE_NAMES, HEAD_TABLES
from rollout_equality.config.settings import FUSIONS, PAPER_FUSION
from rollout_equality.reporting.writers import write_csv, write_html
from rollout_equality.runtime.files import require_paths

RUN = ["model", "dataset", "token_set"]


def head_rates(heads: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set): layers, heads, (input, layer, head) triples, how many hold, rate and Wilson
    95% interval, over the heads file's per-head rows."""
    per_head = heads[heads["head"].notna()]
    rows = []
    for key, g in per_head.groupby(RUN, sort=True):
        rows.append(
            {
                **dict(zip(RUN, key)),
                "n_layers": int(g["n_layers"].iloc[0]),
                "n_heads": int(g["n_heads"].iloc[0]),
                "triples": len(g),
                **interval_row(int(g["holds"].sum()), len(g)),
            }
        )
    columns = [*RUN, "n_layers", "n_heads", "triples", "holds", "rate", "ci_low", "ci_high"]
    return pd.DataFrame(rows, columns=columns)


def head_layer_rates(heads: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set, layer, head): the rate over inputs (the figure's cells)."""
    per_head = heads[heads["head"].notna()].astype({"head": int})
    keys = [*RUN, "layer", "head"]
    return per_head.groupby(keys, sort=True)["holds"].mean().rename("rate").reset_index()


def head_agreement(records: pd.DataFrame, heads: pd.DataFrame) -> pd.DataFrame:
    """Per (model, dataset, token set), of the (input, layer) pairs with per-head rows: the head average holds
    (``mean_holds``), every head holds (``heads_hold``), the average holds while some head fails
    (``mean_holds_head_fails``) and fails while every head holds (``mean_fails_heads_hold``), with the last two's
    shares of the pairs."""
    keys = [*RUN, "input_id", "layer"]
    per_head = heads[heads["head"].notna()]
    every = per_head.groupby(keys, sort=True)["holds"].all().rename("heads_hold").reset_index()
    both = every.merge(records[keys + ["holds"]], on=keys, how="inner", validate="one_to_one")
    rows = []
    for key, g in both.groupby(RUN, sort=True):
        mean, heads_hold = g["holds"].astype(bool), g["heads_hold"].astype(bool)
        n = len(g)
        rescued, broken = int((mean & ~heads_hold).sum()), int((~mean & heads_hold).sum())
        rows.append(
            {
                **dict(zip(RUN, key)),
                "pairs": n,
                "mean_holds": int(mean.sum()),
                "heads_hold": int(heads_hold.sum()),
                "mean_holds_head_fails": rescued,
                "share_mean_holds_head_fails": rescued / n,
                "mean_fails_heads_hold": broken,
                "share_mean_fails_heads_hold": broken / n,
            }
        )
    columns = [
        *RUN,
        "pairs",
        "mean_holds",
        "heads_hold",
        "mean_holds_head_fails",
        "share_mean_holds_head_fails",
        "mean_fails_heads_hold",
        "share_mean_fails_heads_hold",
    ]
    return pd.DataFrame(rows, columns=columns)


def fusion_rates(
    records: pd.DataFrame, rollout: pd.DataFrame, heads: pd.DataFrame, heads_rollout: pd.DataFrame
) -> pd.DataFrame:
    """Per (model, dataset, token set, fusion), for the runs with fused rows: (input, layer) pairs, how many hold,
    rate, Wilson 95% interval, and at the last depth the medians of κ of the rollout and of the product bound.
    ``mean`` comes from the head-averaged records and rollout records."""
    fused = heads[heads["fusion"].notna()]
    runs = fused[["model", "dataset"]].drop_duplicates()
    layers = pd.concat(
        [records.merge(runs, on=["model", "dataset"]).assign(fusion=PAPER_FUSION), fused], ignore_index=True
    )
    chains = pd.concat(
        [rollout.merge(runs, on=["model", "dataset"]).assign(fusion=PAPER_FUSION), heads_rollout], ignore_index=True
    )
    last = chains[chains["depth"] == chains["n_layers"] - 1].set_index([*RUN, "fusion"]).sort_index()
    order = {f: i for i, f in enumerate(FUSIONS)}
    rows = []
    for key, g in layers.groupby([*RUN, "fusion"], sort=True):
        chain = last.loc[key]
        rows.append(
            {
                **dict(zip([*RUN, "fusion"], key)),
                "pairs": len(g),
                **interval_row(int(g["holds"].sum()), len(g)),
                "kappa_rollout": float(np.median(chain["kappa_rollout"])),
                "product_bound": float(np.median(chain["product_bound"])),
            }
        )
    columns = [*RUN, "fusion", "pairs", "holds", "rate", "ci_low", "ci_high", "kappa_rollout", "product_bound"]
    df = pd.DataFrame(rows, columns=columns)
    return df.sort_values([*RUN, "fusion"], key=lambda c: c.map(order) if c.name == "fusion" else c, kind="stable")


PANELS_PER_ROW = 5
"""Panels side by side at most (a group with more runs wraps), so that the figure's text reads at a page's width."""


def heads_figure(cells: pd.DataFrame, groups, token_set: str = "content"):
    """Heads × layers heat maps of the per-head rate (``token_set``), one panel per run with per-head rows, in the
    order of ``groups`` (:func:`rollout_equality.reporting.figures.run_groups`: trained models, then their untrained controls,
    then FT-Transformer; :data:`PANELS_PER_ROW` to a row), so that trained models stand above their controls."""
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    from rollout_equality.reporting.figures import FONT_PT, GROUPS

    cells = cells[cells["token_set"] == token_set]
    rows = [(kind, [run for run in runs if run in set(zip(cells["model"], cells["dataset"]))]) for kind, runs in groups]
    rows = [(kind, runs) for kind, runs in rows if runs]
    if not rows:
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.text(0.5, 0.5, "no per-head records in this suite", ha="center", va="center", fontsize=FONT_PT["label"])
        ax.axis("off")
        return fig
    rows = [(kind, runs[i : i + PANELS_PER_ROW]) for kind, runs in rows for i in range(0, len(runs), PANELS_PER_ROW)]
    ncols = max(len(runs) for _, runs in rows)
    fig, axes = plt.subplots(
        len(rows), ncols, figsize=(1.6 * ncols + 0.9, 1.6 * len(rows) + 0.3), squeeze=False, constrained_layout=True
    )
    image = None
    for r, (kind, runs) in enumerate(rows):
        for c in range(ncols):
            ax = axes[r][c]
            if c >= len(runs):
                ax.axis("off")
                continue
            model, dataset = runs[c]
            g = cells[(cells["model"] == model) & (cells["dataset"] == dataset)]
            grid = g.pivot(index="head", columns="layer", values="rate").sort_index().to_numpy()
            image = ax.imshow(grid, vmin=0, vmax=1, cmap="viridis", aspect="auto", origin="lower")
            first = c == 0 and (r == 0 or rows[r - 1][0] != kind)  # a group's heading on its first panel
            ax.set_title(
                f"{GROUPS[kind] + ':' if first else ''}\n{model}\n({dataset})", fontsize=FONT_PT["tick"], loc="left"
            )
            ax.set_xlabel("layer", fontsize=FONT_PT["label"])
            ax.set_ylabel("head", fontsize=FONT_PT["label"])
            ax.tick_params(labelsize=FONT_PT["tick"])
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
            ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    bar = fig.colorbar(image, ax=axes, fraction=0.03, pad=0.02)
    bar.set_label(f"rate over inputs ({token_set} tokens)", fontsize=FONT_PT["label"])
    bar.ax.tick_params(labelsize=FONT_PT["tick"])
    return fig


def write_head_tables(
    record_paths: list,
    rollout_paths: list,
    heads_paths: list,
    heads_rollout_paths: list,
    out: Mapping[str, str | os.PathLike],
    kinds: Mapping[str, str],
) -> None:
    """The head tables (CSV and HTML) and the heads figure (PDF and PNG) of one suite at the paths in ``out``
    (:data:`rollout_equality.config.paths.HEAD_TABLES`'s keys)."""
    from rollout_equality.condition.records import read_records
    from rollout_equality.reporting.figures import run_groups, write_figure

    require_paths(out, HEAD_TABLES, "write_head_tables")

    def read(paths):
        return pd.concat([read_records(p) for p in paths], ignore_index=True)

    records, rollout, heads, heads_rollout = map(read, (record_paths, rollout_paths, heads_paths, heads_rollout_paths))
    frames = {
        "heads": head_rates(heads),
        "agreement": head_agreement(records, heads),
        "fusions": fusion_rates(records, rollout, heads, heads_rollout),
    }
    for key in HEAD_TABLE_NAMES:
        write_csv(frames[key], out[key])
        write_html(frames[key], out[f"html_{key}"], title=HEAD_TABLE_NAMES[key])
    figure = heads_figure(head_layer_rates(heads), run_groups(records, kinds))
    write_figure(figure, out["heads_pdf"], out["heads_png"])
