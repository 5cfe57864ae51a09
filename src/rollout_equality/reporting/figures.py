"""Figures of the paper (matplotlib, PDF for the paper, PNG for the README and report)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rollout_equality.config.paths import FIGURE_NAMES as SUITE_FIGURES  # noqa: E402
from rollout_equality.runtime.files import atomic_path  # noqa: E402

# Fixed metadata keeps PDFs byte-identical between runs.
_PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}
_PNG_METADATA = {"Software": None}

DPI = 200
"""The resolution of every figure (points to pixels: ``pt / 72 * DPI``)."""
FONT_PT = {"title": 9, "label": 8, "tick": 7, "note": 6.5}
"""The font sizes of the figures (points), by role: titles, axis labels, tick labels and legends, notes in the plot.
None is smaller than ``min(FONT_PT.values())``: tests/repository/test_docs.py checks that it reads at the size a page shows the
figure."""


def save(fig: plt.Figure, path: str | os.PathLike) -> None:
    """Save ``fig`` atomically as PDF or PNG (by extension) with reproducible metadata."""
    path = Path(path)
    metadata = _PDF_METADATA if path.suffix == ".pdf" else _PNG_METADATA
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip("."), metadata=metadata, dpi=DPI, bbox_inches="tight")


def baseline_figure(df: pd.DataFrame, claim: Mapping | None = None) -> plt.Figure:
    """Rate of the condition on random stochastic matrices against n, with Wilson 95% intervals; ``claim`` (the
    config's claim of kind baseline) as a band over the sizes it covers."""
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    if claim is not None:
        lo, hi = claim["range"]
        ax.fill_between(
            [max(claim["min_n"], df["n"].min()), df["n"].max()],
            100 * lo,
            100 * hi,
            color="0.88",
            lw=0,
            label=f"paper: {100 * lo:.0f}–{100 * hi:.0f}% (n ≥ {claim['min_n']})",
        )
    ax.errorbar(
        df["n"],
        100 * df["rate"],
        yerr=[100 * (df["rate"] - df["ci_low"]), 100 * (df["ci_high"] - df["rate"])],
        fmt="o-",
        ms=3.5,
        lw=1,
        capsize=2,
        color="C0",
        label="Dirichlet(1) rows (95% Wilson CI)",
    )
    ax.set_xscale("log", base=2)
    ticks = [t for t in (2, 4, 8, 16, 32, 64, 128, 256, 512, 1024) if df["n"].min() <= t <= df["n"].max()]
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(matplotlib.ticker.NullLocator())
    ax.set_xlabel("matrix size $n$ (tokens)")
    ax.set_ylabel("condition holds (%)")
    ax.set_title("Equality condition on uniformly random stochastic matrices", fontsize=FONT_PT["title"])
    ax.legend(fontsize=FONT_PT["tick"], frameon=False)
    ax.grid(alpha=0.3, lw=0.5)
    fig.tight_layout()
    return fig


def write_baseline_figure(df: pd.DataFrame, claim: Mapping | None, *paths: str | os.PathLike) -> None:
    """Draw :func:`baseline_figure` once and save it to every path given (.pdf / .png)."""
    write_figure(baseline_figure(df, claim), *paths)


def _colours(models) -> dict[str, str]:
    """One colour per model, the same in every figure of a run (models in sorted order; 20 distinct)."""
    palette = plt.get_cmap("tab20").colors
    return {m: palette[i % len(palette)] for i, m in enumerate(sorted(set(models)))}


GROUPS = {  # kind of run -> the heading of its rows, in reading order
    "trained": "trained models",
    "untrained control": "untrained controls (random weights)",
    "ftt": "FT-Transformer (trained on tables)",
}


def _seeded(records: pd.DataFrame) -> set[tuple[str, str]]:
    """The (model, dataset) pairs of the seeded runs (FT-Transformer) in layer or rollout records."""
    from rollout_equality.condition.records import run_seeds

    return set(run_seeds(records)[["model", "dataset"]].itertuples(index=False, name=None))


def run_groups(records: pd.DataFrame, kinds: Mapping[str, str]) -> list[tuple[str, list[tuple[str, str]]]]:
    """The (model, dataset) runs of ``records`` in reading order, as (kind, runs) for each kind of :data:`GROUPS`
    present: trained models, untrained controls, FT-Transformer runs (the seeded records). ``kinds``: each model's
    kind by its config entry (:func:`rollout_equality.config.checks.model_kinds`). Within a group, runs keep the order of
    the records (the suite's order in config.yaml)."""
    seeded = _seeded(records)
    runs = list(dict.fromkeys(zip(records["model"], records["dataset"])))

    def kind(run: tuple[str, str]) -> str:
        if run in seeded:
            return "ftt"
        if run[0] not in kinds:
            raise ValueError(
                f"model {run[0]!r} of the records is not under models: in the config (whether it is trained or an "
                "untrained control comes from its source there)"
            )
        return kinds[run[0]]

    by_kind = {k: [run for run in runs if kind(run) == k] for k in GROUPS}
    return [(k, found) for k, found in by_kind.items() if found]


def _rows(groups) -> list[tuple[str, str | tuple[str, str]]]:
    """The rows of a grouped figure, top to bottom: ("group", kind) above the ("run", (model, dataset)) of each group."""
    return [row for kind, runs in groups for row in [("group", kind)] + [("run", run) for run in runs]]


def _label(model: str, dataset: str) -> str:
    return f"{model} ({dataset})"


def _row_labels(ax, rows) -> None:
    """Row labels on ``ax``'s y axis: runs as ``model (dataset)``, each group's heading in bold with a rule above."""
    ax.set_yticks(
        range(len(rows)), [GROUPS[v] if k == "group" else _label(*v) for k, v in rows], fontsize=FONT_PT["tick"]
    )
    ax.tick_params(axis="y", length=0)
    for tick, (kind, _) in zip(ax.get_yticklabels(), rows):
        if kind == "group":
            tick.set_fontweight("bold")


def _group_rules(axes, rows) -> None:
    for ax in axes:
        for r, (kind, _) in enumerate(rows):
            if kind == "group" and r:
                ax.axhline(r - 0.5, color="0.6", lw=0.6, clip_on=False)


def _bands(spec, groups, token_sets) -> dict[tuple[str, str, str], tuple[float, float, str]]:
    """{(model, dataset, token set): (low, high, claim)}: the claimed range each run is read against
    (:func:`rollout_equality.reporting.claims.compared_range`)."""
    from rollout_equality.config.checks import FTT_PREFIX
    from rollout_equality.reporting.claims import compared_range

    found = {}
    for kind, runs in groups:
        for model, dataset in runs:
            subject = f"{FTT_PREFIX}{dataset}" if kind == "ftt" else model
            for token_set in token_sets:
                band = compared_range(spec, kind, subject, token_set)
                if band is not None:
                    found[(model, dataset, token_set)] = band
    return found


def _bands_note(spec, groups, bands, token_sets) -> str:
    """The legend of the bands: per group of rows, the claims its runs are read against, with their ranges."""
    said = []
    for kind, runs in groups:
        names = list(dict.fromkeys(b[2] for run in runs for t in token_sets if (b := bands.get((*run, t)))))
        if names:
            ranges = ", ".join(f"{n} {100 * spec[n]['range'][0]:.0f}–{100 * spec[n]['range'][1]:.0f}%" for n in names)
            said.append(f"{GROUPS[kind]}: {ranges}")
    return (
        "Grey bands: the claimed range (config.yaml claims) each run is read against; "
        + "; ".join(said)
        + ". Red: the run's Wilson 95% interval misses it (▲ above, ▼ below)."
    )


def depth_figure(
    depth: pd.DataFrame, rates: pd.DataFrame, groups, spec: Mapping[str, Mapping] | None = None
) -> plt.Figure:
    """The rate of the condition in every layer, one row per model and data set, as a heat table, and beside it the
    rate over all layers against the claimed range the run is read against.

    Each row spans its model's depth, first to last layer, in equal cells (so a 6-layer and a 24-layer model share
    the axis of normalised depth); the colour is the share of inputs for which the condition holds in that layer.
    The strip at its right shows the rate over all input-layer pairs with its Wilson 95% interval (``rates``:
    :func:`rollout_equality.reporting.stats.model_rates`) over a grey band, the range of the claim (``spec``: the config's
    ``claims:``) the run is read against: trained models their claims on that token set, untrained controls the
    random-matrix range, FT-Transformer its claim; red where the interval misses the band. Content tokens on the
    left, all tokens on the right; rows grouped by :func:`run_groups`.
    """
    import textwrap

    from matplotlib.collections import PatchCollection

    from rollout_equality.reporting.claims import side

    token_sets = ("content", "all")
    rows = _rows(groups)
    bands = _bands(spec or {}, groups, token_sets)
    pooled = rates.set_index(["model", "dataset", "token_set"])
    cmap, norm = plt.get_cmap("viridis"), matplotlib.colors.Normalize(0, 100)
    height = 0.3 * len(rows) + 1.7
    fig, axes = plt.subplots(
        1, 4, figsize=(9.0, height), sharey=True, gridspec_kw={"width_ratios": [3, 1.1, 3, 1.1], "wspace": 0.32}
    )
    for heat, strip, token_set in zip(axes[::2], axes[1::2], token_sets):
        sel = depth[depth["token_set"] == token_set]
        patches, colours = [], []
        for r, (kind, run) in enumerate(rows):
            if kind == "group":
                continue
            model, dataset = run
            g = sel[(sel["model"] == model) & (sel["dataset"] == dataset)].sort_values("layer")
            if g.empty:
                continue
            L = int(g["layer"].max()) + 1
            for layer, rate in zip(g["layer"], g["rate"]):
                patches.append(matplotlib.patches.Rectangle((layer / L, r - 0.42), 1 / L, 0.84))
                colours.append(100 * rate)
            p = pooled.loc[(model, dataset, token_set)]
            band = bands.get((model, dataset, token_set))
            where = side(band[0], band[1], p["ci_low"], p["ci_high"]) if band else ""
            if band:
                strip.add_patch(
                    matplotlib.patches.Rectangle(
                        (100 * band[0], r - 0.42), 100 * (band[1] - band[0]), 0.84, color="0.82", lw=0
                    )
                )
            colour = "C3" if where else "0.1"
            strip.plot([100 * p["ci_low"], 100 * p["ci_high"]], [r, r], color=colour, lw=1.0, clip_on=False)
            strip.plot([100 * p["rate"]], [r], "o", ms=2.8, color=colour, clip_on=False)
            mark = {"above the range": " ▲", "below the range": " ▼"}.get(where, "")
            strip.text(
                106,
                r,
                f"{100 * p['rate']:.0f}%{mark}",
                va="center",
                fontsize=FONT_PT["note"],
                color=colour,
                clip_on=False,
            )
        collection = PatchCollection(patches, cmap=cmap, norm=norm, edgecolor="white", linewidth=0.4)
        collection.set_array(np.asarray(colours))
        heat.add_collection(collection)
        heat.set_xlim(0, 1)
        heat.set_xticks([0, 0.5, 1], ["first", "middle", "last"], fontsize=FONT_PT["tick"])
        heat.set_xlabel("layer (normalised depth)", fontsize=FONT_PT["tick"])
        heat.set_title(f"{token_set} tokens: per layer", fontsize=FONT_PT["label"])
        strip.set_xlim(0, 100)
        strip.set_xticks([0, 50, 100], ["0", "50", "100%"], fontsize=FONT_PT["note"])
        strip.set_xlabel("all layers", fontsize=FONT_PT["tick"])
        strip.grid(alpha=0.3, lw=0.5, axis="x")
        for ax in (heat, strip):
            ax.tick_params(axis="y", length=0)
            for spine in ("top", "right"):
                ax.spines[spine].set_visible(False)
    axes[0].set_ylim(len(rows) - 0.5, -0.5)
    _row_labels(axes[0], rows)
    _group_rules(axes, rows)
    bar = fig.colorbar(matplotlib.cm.ScalarMappable(norm=norm, cmap=cmap), ax=axes, fraction=0.02, pad=0.06)
    bar.set_label("condition holds (% of inputs)", fontsize=FONT_PT["tick"])
    bar.ax.tick_params(labelsize=FONT_PT["note"])
    fig.suptitle(
        "Equality condition per layer, and over all layers against the claimed range", fontsize=FONT_PT["title"]
    )
    if bands:
        note = textwrap.fill(_bands_note(spec, groups, bands, token_sets), 150)
        fig.text(0.02, 0.01, note, fontsize=FONT_PT["note"], ha="left", va="top")
    return fig


def slack_figure(records: pd.DataFrame, groups) -> plt.Figure:
    """Distribution of slack = ½(1 + κ(A)) − κ(½(I + A)) per model (content tokens), log scale; 0 = equality.

    Rows grouped as the depth figure's (:func:`run_groups`); at the right, the share of input-layer pairs at equality.
    """
    content = records[records["token_set"] == "content"]
    rows = _rows(groups)
    fig, ax = plt.subplots(figsize=(6.5, 0.27 * max(len(rows), 3) + 1.2))
    colours = _colours(content["model"])
    floor = 1e-12
    for r, (kind, run) in enumerate(rows):
        if kind == "group":
            continue
        model, dataset = run
        g = content[(content["model"] == model) & (content["dataset"] == dataset)]
        slack = g["slack"].clip(lower=floor).to_numpy()
        jitter = (np.random.default_rng(r).random(len(slack)) - 0.5) * 0.5
        ax.scatter(slack, r + jitter, s=4, alpha=0.5, color=colours[model], lw=0)
        ax.text(
            1.02,
            r,
            f"{100 * g['holds'].mean():.0f}% at equality",
            transform=ax.get_yaxis_transform(),
            va="center",
            fontsize=FONT_PT["note"],
        )
    _row_labels(ax, rows)
    _group_rules([ax], rows)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xscale("log")
    ax.set_xlabel(
        f"slack ½(1+κ(A)) − κ(½(I+A)) per input and layer, content tokens\n"
        f"(values ≤ {floor:g}, equality, drawn at {floor:g})",
        fontsize=FONT_PT["label"],
    )
    ax.tick_params(axis="x", labelsize=FONT_PT["tick"])
    ax.grid(alpha=0.3, lw=0.5, axis="x")
    fig.tight_layout()
    return fig


def rollout_figure(rollout: pd.DataFrame, groups) -> plt.Figure:
    """How tight the product bounds are on the rollout: per model (all tokens), the medians over inputs
    of κ(rollout) and of Π κ(½(I + A_l)) divided by the product bound Π ½(1 + κ(A_l)), against
    normalised depth, on one shared axis (1 = the bound is attained). Each group of :func:`run_groups` starts a new
    row of panels under its heading."""
    from rollout_equality.reporting.stats import normalised_depth

    data = rollout[rollout["token_set"] == "all"]
    cols = min(max(len(runs) for _, runs in groups), 4)
    heights = [(len(runs) + cols - 1) // cols for _, runs in groups]
    row_in = 1.55  # a row of panels, in inches: the whole figure stays within a page's height at a column's width
    fig = plt.figure(figsize=(2.4 * cols, sum(row_in * h + 0.35 for h in heights) + 0.4), layout="constrained")
    subfigs = np.atleast_1d(fig.subfigures(len(groups), 1, height_ratios=[row_in * h + 0.35 for h in heights]))
    first = None
    for subfig, (kind, runs), n_rows in zip(subfigs, groups, heights):
        axes = subfig.subplots(n_rows, cols, squeeze=False, sharex=True, sharey=True)
        subfig.suptitle(GROUPS[kind], fontsize=FONT_PT["label"], fontweight="bold", x=0.01, ha="left")
        for ax, (model, dataset) in zip(axes.flat, runs):
            g = data[(data["model"] == model) & (data["dataset"] == dataset)]
            ratio = g.assign(
                rollout=g["kappa_rollout"] / g["product_bound"], half=g["product_kappa_half"] / g["product_bound"]
            )
            med = ratio.groupby("depth")[["rollout", "half"]].median()
            x = normalised_depth(med.index, int(g["n_layers"].iloc[0]))
            ax.axhline(1, color="0.4", ls="--", lw=0.8)
            ax.plot(x, med["half"], ":", color="C3", lw=1.3, label="Π κ(½(I+A_l)) / bound")
            ax.plot(x, med["rollout"], "-", color="C0", lw=1.4, label="κ(rollout) / bound")
            ax.set_title(_label(model, dataset), fontsize=FONT_PT["note"])
            ax.set_ylim(0, 1.08)
            ax.set_xlim(0, 1)
            ax.tick_params(labelsize=FONT_PT["note"])
            ax.grid(alpha=0.3, lw=0.5)
            first = first or ax
        for ax in list(axes.flat)[len(runs) :]:
            ax.set_visible(False)
        for ax in axes[-1]:
            ax.set_xlabel("normalised depth", fontsize=FONT_PT["tick"])
        for ax in axes[:, 0]:
            ax.set_ylabel("ratio to Π ½(1+κ(A_l))", fontsize=FONT_PT["tick"])
    first.legend(fontsize=FONT_PT["note"], frameon=False, loc="lower left")
    fig.suptitle(
        "Rollout against the product bound (medians over inputs, all tokens; dashed: the bound)",
        fontsize=FONT_PT["title"],
    )
    return fig


def heatmap_figure(panels: list[tuple[np.ndarray, np.ndarray, int, str]]) -> plt.Figure:
    """Head-averaged attention of one input in one layer (all tokens), one panel per (attention
    (L, n, n), special (n,), layer, title).

    White lines frame the special tokens; red squares mark the entries (i,i), (j,j),
    (i,j), (j,i) of the pair of rows at maximal TV distance, whose self-dominance
    decides the condition.
    """
    from rollout_equality.condition.dobrushin import pairwise_tv

    fig, axes = plt.subplots(1, len(panels), figsize=(4.2 * len(panels), 3.8), squeeze=False)
    for ax, (attention, special, layer, title) in zip(axes[0], panels):
        A = attention[layer].astype(np.float64)
        tv = pairwise_tv(A)
        i, j = np.unravel_index(np.argmax(np.triu(tv, 1)), tv.shape)
        image = ax.imshow(A, cmap="viridis", norm=matplotlib.colors.PowerNorm(0.4))
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention")
        for k in np.flatnonzero(special):
            for edge in (k - 0.5, k + 0.5):
                ax.axhline(edge, color="w", lw=0.4)
                ax.axvline(edge, color="w", lw=0.4)
        for r, c in ((i, i), (j, j), (i, j), (j, i)):
            ax.add_patch(matplotlib.patches.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="r", lw=1.2))
        dominant = A[i, i] >= A[j, i] and A[j, j] >= A[i, j]
        ax.set_xlabel(
            f"key token; red: rows {i}, {j} at maximal TV {tv[i, j]:.3f} "
            f"({'mutually self-dominant' if dominant else 'not self-dominant'})",
            fontsize=FONT_PT["note"],
        )
        ax.set_ylabel("query token", fontsize=FONT_PT["tick"])
        ax.set_title(title, fontsize=FONT_PT["tick"])
    fig.tight_layout()
    return fig


def write_figure(fig: plt.Figure, *paths: str | os.PathLike) -> None:
    """Save one figure to every path given (.pdf / .png) and close it."""
    try:
        for path in paths:
            save(fig, path)
    finally:
        plt.close(fig)


"""The figures :func:`write_suite_figures` draws; ``out`` holds ``<name>_pdf`` and ``<name>_png`` for each."""


def write_suite_figures(
    record_paths: list,
    rollout_paths: list,
    dump_paths: list,
    out: Mapping[str, str | os.PathLike],
    kinds: Mapping[str, str],
    claims: Mapping[str, Mapping] | None = None,
    heatmaps: int = 1,
) -> list[Path]:
    """Depth, slack, rollout and heatmap figures of one suite, each as PDF and PNG at the paths in ``out``.

    Rows and panels are grouped by :func:`run_groups` (``kinds``: each model's kind by its config entry,
    :func:`rollout_equality.config.checks.model_kinds`), in the order of ``record_paths`` within a group; the depth figure
    sets each run beside the range of the claim (``claims``: the config's ``claims:``) it is read against. The
    heatmap figure has a panel for each of the first ``heatmaps`` dumps that hold attention (the suite's experiments
    marked ``heatmap: true`` come first in ``dump_paths``).
    """
    from rollout_equality.condition.records import read_dump, read_records
    from rollout_equality.reporting.stats import depth_rates, model_rates

    paths = {name: [Path(out[f"{name}_pdf"]), Path(out[f"{name}_png"])] for name in SUITE_FIGURES}
    records = pd.concat([read_records(p) for p in record_paths], ignore_index=True)
    rollout = pd.concat([read_records(p) for p in rollout_paths], ignore_index=True)
    groups = run_groups(records, kinds)
    for name, fig in (
        ("depth", depth_figure(depth_rates(records), model_rates(records), groups, claims)),
        ("slack", slack_figure(records, groups)),
        ("rollout", rollout_figure(rollout, run_groups(rollout, kinds))),
    ):
        write_figure(fig, *paths[name])
    heatmap = paths["heatmap"]
    panels = []
    for dump_path in dump_paths:
        dump = read_dump(dump_path)
        if not dump.inputs:
            continue
        input_id, (attention, special) = next(iter(dump.inputs.items()))
        model, dataset = dump.model, dump.dataset
        layer = attention.shape[0] - 1
        row = records[
            (records["model"] == model)
            & (records["dataset"] == dataset)
            & (records["input_id"] == input_id)
            & (records["layer"] == layer)
            & (records["token_set"] == "all")
        ].iloc[0]
        title = (
            f"{model} on {dataset}, input {input_id}\n"
            f"last layer (all tokens): condition {'holds' if row['holds'] else 'fails'}"
        )
        panels.append((attention, special, layer, title))
        if len(panels) == heatmaps:
            break
    if panels:
        write_figure(heatmap_figure(panels), *heatmap)
    else:  # no model of the suite dumped attention: say so in the figure itself
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.text(
            0.5,
            0.5,
            "no attention dump in this suite (extraction.dump_inputs = 0)",
            ha="center",
            va="center",
            fontsize=FONT_PT["label"],
        )
        ax.axis("off")
        write_figure(fig, *heatmap)
    return [p for pair in paths.values() for p in pair]
