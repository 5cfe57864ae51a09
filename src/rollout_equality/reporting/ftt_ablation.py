"""The FT-Transformer recipe ablation: which preparation or training choice moves the condition's rate.

Each setting of ``tabular.ablation`` is one table ``<table>@<setting>`` (rollout_equality.config.checks.
resolved_tables) trained with every seed and measured like any FT-Transformer run. This module reads
those runs' records and metrics and writes:

* ``summary``: per setting, what it changes against the reference recipe, the test score (mean, sd
  over seeds), and the condition's rate on content and all tokens: pooled over seeds with a Wilson 95%
  interval, the range of the per-seed rates, and the first block's content rate (pooled, range);
* ``layers``: per setting, seed, token set and layer, the rate with its Wilson interval;
* a LaTeX table, an HTML page and a figure (content and all-token rate against the layer, per setting,
  mean over seeds with the seeds' range).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from rollout_equality.config.paths import FTT_ABLATION as ABLATION_FILES  # the files write_ftt_ablation writes, by key
from rollout_equality.config.paths import in_paper
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import require_paths

REFERENCE = "reference"
"""The setting that changes nothing (the default recipe); the others are described against it."""


def describe(entry: dict[str, Any], base: dict[str, Any]) -> str:
    """What a setting changes against ``base`` (another resolved table entry), as ``key=value`` items."""
    changes = []
    if entry["source"] != base["source"]:
        src = entry["source"]
        if "csv" in src:
            changes.append("rows=" + ("file+test_path" if src["csv"].get("test_path") else "file only"))
        else:
            changes.append("source=" + ",".join(src))
    for section in ("split", "recipe", "training"):
        for key, value in entry[section].items():
            if base[section].get(key) != value:
                changes.append(f"{key}={value}")
    return "; ".join(changes) or "none (the reference recipe)"


def _run_rates(records: pd.DataFrame) -> pd.DataFrame:
    """Per (dataset, model, token set, layer) holds and pairs of the records (layer −1: all layers)."""
    both = pd.concat([records, records.assign(layer=-1)])
    g = both.groupby(["dataset", "model", "token_set", "layer"], sort=True)["holds"]
    return g.agg(holds="sum", pairs="size").reset_index()


def ablation_tables(
    record_paths: list[str | os.PathLike], metrics_paths: list[str | os.PathLike], settings: dict[str, dict]
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(summary, layers) of the ablation runs; ``settings`` maps each ablation table name to its resolved entry."""
    from rollout_equality.condition.baseline import interval_row
    from rollout_equality.condition.records import read_records, run_seeds

    records = pd.concat([read_records(p) for p in record_paths], ignore_index=True)
    unknown = sorted(set(records["dataset"]) - set(settings))
    if unknown:
        raise ValueError(f"records of tables {unknown} are not settings of the ablation ({sorted(settings)})")
    scores = pd.DataFrame([json.loads(Path(p).read_text()) for p in metrics_paths])
    per_run = _run_rates(records).merge(run_seeds(records), on=["model", "dataset"], how="left")
    intervals = pd.DataFrame(
        [interval_row(int(k), int(n)) for k, n in zip(per_run["holds"], per_run["pairs"])], index=per_run.index
    )
    per_run[["rate", "ci_low", "ci_high"]] = intervals[["rate", "ci_low", "ci_high"]]

    names = {t: e["ablation"]["setting"] for t, e in settings.items()}
    order = list(settings)
    reference = next((t for t in order if names[t] == REFERENCE), order[0])
    rows = []
    for table in order:
        entry = settings[table]
        runs = per_run[per_run["dataset"] == table]
        sc = scores[scores["dataset"] == table] if not scores.empty else scores
        row: dict[str, Any] = {
            "setting": names[table],
            "label": entry["ablation"]["label"],
            "changes": "reference recipe" if table == reference else describe(entry, settings[reference]),
            "seeds": int(runs["seed"].nunique()),
            "metric": sc["metric"].iloc[0] if len(sc) else "",
            "test_mean": float(sc["test"].mean()) if len(sc) else float("nan"),
            "test_sd": float(sc["test"].std(ddof=1)) if len(sc) > 1 else float("nan"),
            "best_epoch_mean": float(sc["best_epoch"].mean()) if len(sc) else float("nan"),
        }
        for token_set in ("content", "all"):
            for what, layer in (("", -1), ("first_", 0)):
                r = runs[(runs["token_set"] == token_set) & (runs["layer"] == layer)]
                pooled = interval_row(int(r["holds"].sum()), int(r["pairs"].sum()))
                prefix = f"{what}{token_set}"
                row[f"{prefix}_rate"] = pooled["rate"]
                if not what:
                    row[f"{prefix}_ci_low"], row[f"{prefix}_ci_high"] = pooled["ci_low"], pooled["ci_high"]
                row[f"{prefix}_seed_min"] = float(r["rate"].min()) if len(r) else float("nan")
                row[f"{prefix}_seed_max"] = float(r["rate"].max()) if len(r) else float("nan")
        rows.append(row)
    summary = pd.DataFrame(rows)
    layers = per_run[per_run["layer"] >= 0].assign(setting=lambda d: d["dataset"].map(names))
    layers = layers[["setting", "seed", "token_set", "layer", "pairs", "holds", "rate", "ci_low", "ci_high"]]
    layers = layers.assign(_o=layers["setting"].map({names[t]: i for i, t in enumerate(order)}))
    layers = layers.sort_values(["_o", "token_set", "seed", "layer"], kind="stable").drop(columns="_o")
    return summary, layers.reset_index(drop=True)


def ablation_figure(layers: pd.DataFrame, summary: pd.DataFrame, claim: Mapping | None = None):
    """Small multiples: one panel per setting, its rate on content tokens per block (each seed a dot, the mean
    over seeds a line) against the reference recipe's mean (grey), and the claimed range (``claim``, a config
    claim of kind rate) as a band."""
    from rollout_equality.reporting.figures import FONT_PT, plt

    settings = list(summary["setting"])
    labels = dict(zip(summary["setting"], summary["label"]))
    content = layers[layers["token_set"] == "content"]
    ref_name = next((s for s in settings if s == REFERENCE), settings[0])
    ref = content[content["setting"] == ref_name].groupby("layer")["rate"].mean()
    n_layers = int(layers["layer"].max()) + 1 if len(layers) else 1
    ncols = min(3, len(settings))
    nrows = -(-len(settings) // ncols)
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(2.4 * ncols + 0.4, 1.9 * nrows + 0.5), sharex=True, sharey=True, squeeze=False
    )
    for ax in axes.flat[len(settings) :]:
        ax.set_visible(False)
    for i, (ax, setting) in enumerate(zip(axes.flat, settings)):
        if claim is not None:
            low, high = claim["range"]
            ax.axhspan(
                100 * low,
                100 * high,
                color="0.92",
                lw=0,
                label=f"paper, all blocks pooled: {100 * low:.0f}–{100 * high:.0f}%",
            )
        if setting != ref_name:
            ax.plot(ref.index, 100 * ref, "-", color="0.55", lw=1.2, label=labels[ref_name])
        g = content[content["setting"] == setting]
        ax.plot(g["layer"], 100 * g["rate"], "o", ms=3, color="C0", alpha=0.5, lw=0, label="one seed")
        mean = g.groupby("layer")["rate"].mean()
        ax.plot(mean.index, 100 * mean, "o-", ms=4, lw=1.6, color="C0", label="mean over seeds")
        ax.set_title(labels[setting], fontsize=FONT_PT["label"])
        ax.set_ylim(-3, 103)
        ax.set_xticks(range(n_layers), [str(b + 1) for b in range(n_layers)])
        ax.grid(alpha=0.3, lw=0.5)
        ax.tick_params(labelsize=FONT_PT["tick"])
        if i % ncols == 0:
            ax.set_ylabel("holds (%)", fontsize=FONT_PT["label"])
        if i >= len(settings) - ncols:  # the lowest panel of its column
            ax.set_xlabel("block", fontsize=FONT_PT["label"])
            ax.xaxis.set_tick_params(labelbottom=True)
    handles = {}
    for ax in axes.flat[: len(settings)]:
        for h, label in zip(*ax.get_legend_handles_labels()):
            handles.setdefault(label, h)
    fig.legend(
        handles.values(), handles.keys(), fontsize=FONT_PT["tick"], frameon=False, loc="lower center", ncol=len(handles)
    )
    fig.suptitle(
        "FT-Transformer recipe ablation: condition rate on content tokens per block", fontsize=FONT_PT["title"]
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    return fig


def ablation_latex(summary: pd.DataFrame) -> str:
    """The ablation's summary as the paper's booktabs table (a provenance comment first)."""
    from rollout_equality.reporting.writers import latex_tabular

    def pct(value: float) -> str:
        return "" if pd.isna(value) else f"{100 * value:.1f}"

    def span(low: float, high: float) -> str:
        return "" if pd.isna(low) else f"{100 * low:.0f}–{100 * high:.0f}"

    tex = pd.DataFrame(
        {
            "setting": summary["label"],
            "changes": summary["changes"],
            "test": [
                f"{m:.4f}" + ("" if pd.isna(s) else f" ± {s:.4f}")
                for m, s in zip(summary["test_mean"], summary["test_sd"])
            ],
            "content %": [pct(v) for v in summary["content_rate"]],
            "seeds %": [span(lo, hi) for lo, hi in zip(summary["content_seed_min"], summary["content_seed_max"])],
            "block 1 %": [pct(v) for v in summary["first_content_rate"]],
            "all %": [pct(v) for v in summary["all_rate"]],
        }
    )
    return (
        "% Generated by rollout_equality.reporting.suite_tables from the FT-Transformer ablation's records; do not edit.\n"
        + (latex_tabular(tex, column_format="p{2.6cm}p{4.4cm}lrrrr"))
    )


def write_ftt_ablation(
    record_paths: list[str | os.PathLike],
    metrics_paths: list[str | os.PathLike],
    settings: dict[str, dict],
    out: Mapping[str, str | os.PathLike],
    claim: Mapping | None = None,
) -> pd.DataFrame:
    """Write the ablation's tables and figure to ``out`` (every key of :data:`ABLATION_FILES`); return the summary.

    ``claim``: the config claim (kind rate) the figure shows as a band (``tabular.ablation.claim``), or None."""
    from rollout_equality.reporting.figures import write_figure
    from rollout_equality.reporting.writers import write_csv, write_html
    from rollout_equality.runtime.files import write_text

    require_paths(out, ABLATION_FILES, "write_ftt_ablation")
    summary, layers = ablation_tables(record_paths, metrics_paths, settings)
    write_csv(summary, out["summary"])
    write_csv(layers, out["layers"])
    write_html(summary, out["html"], "FT-Transformer recipe ablation (rates pooled over seeds)")

    write_text(out["tex"], ablation_latex(summary))
    write_figure(ablation_figure(layers, summary, claim), out["pdf"], out["png"])
    return summary


def ablation_section(out: str | os.PathLike, inputs: Mapping[str, str | os.PathLike] | None, table: str | None) -> None:
    """The paper's ablation section for one suite (``paper/tables/<suite>/ftt_ablation_section.tex``).

    ``inputs`` (keys ``tex``, ``pdf``, ``summary``: the ablation's files) when the suite shows the ablation:
    the section inputs its table and figure, and records their SHA-256 so that a changed ablation rebuilds
    the PDF. ``None``: a sentence saying it was not run for this suite and how to run it.
    """

    from rollout_equality.runtime.files import write_text

    head = "% Generated by rollout_equality.reporting.ftt_ablation.ablation_section; do not edit.\n"
    if inputs is None:
        write_text(
            out,
            head
            + "\\paragraph{Recipe ablation.} Not shown for this suite: add it to \\texttt{tabular.ablation.suites} "
            "(the overlay \\texttt{overlays/ftt\\_ablation.yaml} does so for the paper suite), or run "
            "\\texttt{snakemake --cores N ftt\\_ablation} for the ablation on its own.\n",
        )
        return
    require_paths(inputs, ("tex", "pdf", "summary"), "ablation_section")
    stamps = "".join(f"% {key}: sha256 {digests.of_file(inputs[key])}\n" for key in ("tex", "pdf", "summary"))
    name = (table or "").replace("_", "\\_")
    write_text(
        out,
        head
        + stamps
        + f"\\subsection*{{Recipe ablation on \\texttt{{{name}}}}}\n"
        + "Each setting changes one choice of the reference recipe (Gorishniy et al.\\ 2021) or several; "
        + "rates pool every seed, \\emph{seeds} gives the range of the per-seed rates.\n"
        + f"\\begin{{center}}\\scriptsize\\input{{{in_paper(ABLATION_FILES['tex'])}}}\\end{{center}}\n"
        + f"\\begin{{center}}\\includegraphics[width=\\linewidth]{{{in_paper(ABLATION_FILES['pdf'])}}}\\end{{center}}\n",
    )
