"""Figures of the paper (matplotlib, PDF for the paper, PNG for the README and report)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.patches  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from rollout_equality.io import atomic_path  # noqa: E402

PAPER_BASELINE_RANGE = (0.24, 0.30)
"""The abstract's range for uniformly random stochastic matrices."""

# Fixed metadata keeps PDFs byte-identical between runs.
_PDF_METADATA = {"CreationDate": None, "ModDate": None, "Producer": None, "Creator": None}
_PNG_METADATA = {"Software": None}


def save(fig: plt.Figure, path: str | os.PathLike) -> None:
    """Save ``fig`` atomically as PDF or PNG (by extension) with reproducible metadata."""
    path = Path(path)
    metadata = _PDF_METADATA if path.suffix == ".pdf" else _PNG_METADATA
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format=path.suffix.lstrip("."), metadata=metadata, dpi=200, bbox_inches="tight")


def baseline_figure(df: pd.DataFrame) -> plt.Figure:
    """Rate of the condition on random stochastic matrices against n, with Wilson 95% intervals."""
    fig, ax = plt.subplots(figsize=(5.0, 3.2))
    lo, hi = PAPER_BASELINE_RANGE
    ax.axhspan(100 * lo, 100 * hi, color="0.88", label=f"paper: {100 * lo:.0f}–{100 * hi:.0f}%")
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
    ax.set_title("Equality condition on uniformly random stochastic matrices", fontsize=9)
    ax.legend(fontsize=7, frameon=False)
    ax.grid(alpha=0.3, lw=0.5)
    fig.tight_layout()
    return fig


def write_baseline_figure(df: pd.DataFrame, *paths: str | os.PathLike) -> None:
    """Draw :func:`baseline_figure` once and save it to every path given (.pdf / .png)."""
    write_figure(baseline_figure(df), *paths)


def _colours(models) -> dict[str, str]:
    """One colour per model, the same in every figure of a run (models in sorted order; 20 distinct)."""
    palette = plt.get_cmap("tab20").colors
    return {m: palette[i % len(palette)] for i, m in enumerate(sorted(set(models)))}


def depth_figure(depth: pd.DataFrame) -> plt.Figure:
    """Rate of the condition against normalised depth, one line per model and data set; content | all tokens."""
    fig, axes = plt.subplots(1, 2, figsize=(8.0, 3.2), sharey=True)
    colours = _colours(depth["model"])
    for ax, token_set in zip(axes, ("content", "all")):
        for (model, dataset), g in depth[depth["token_set"] == token_set].groupby(["model", "dataset"], sort=True):
            g = g.sort_values("depth")
            ax.plot(g["depth"], 100 * g["rate"], "o-", ms=3, lw=1.2, color=colours[model], label=f"{model} ({dataset})")
            ax.fill_between(g["depth"], 100 * g["ci_low"], 100 * g["ci_high"], color=colours[model], alpha=0.12, lw=0)
        ax.set_title(f"{token_set} tokens", fontsize=9)
        ax.set_xlabel("normalised depth (layer / (L − 1))")
        ax.grid(alpha=0.3, lw=0.5)
    axes[0].set_ylabel("condition holds (%)")
    axes[0].set_ylim(-3, 103)
    axes[1].legend(fontsize=6, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    fig.tight_layout()
    return fig


def slack_figure(records: pd.DataFrame) -> plt.Figure:
    """Distribution of slack = ½(1 + κ(A)) − κ(½(I + A)) per model (content tokens), log scale; 0 = equality."""
    content = records[records["token_set"] == "content"]
    groups = sorted(content.groupby(["model", "dataset"]), key=lambda kv: kv[0])
    fig, ax = plt.subplots(figsize=(6.0, 0.45 * max(len(groups), 3) + 1.0))
    colours = _colours(content["model"])
    floor = 1e-12
    for row, ((model, dataset), g) in enumerate(groups):
        slack = g["slack"].clip(lower=floor).to_numpy()
        jitter = (np.random.default_rng(row).random(len(slack)) - 0.5) * 0.5
        ax.scatter(slack, row + jitter, s=4, alpha=0.5, color=colours[model], lw=0)
    ax.set_yticks(range(len(groups)), [f"{m} ({d})" for (m, d), _ in groups], fontsize=7)
    ax.set_xscale("log")
    ax.set_xlabel(f"slack ½(1+κ(A)) − κ(½(I+A)), content tokens (values ≤ {floor:g} drawn at {floor:g}: equality)")
    ax.grid(alpha=0.3, lw=0.5, axis="x")
    fig.tight_layout()
    return fig


def rollout_figure(rollout: pd.DataFrame) -> plt.Figure:
    """Median κ of the rollout, Π κ(½(I + A_l)) and the product bound across depth, per model (all tokens)."""
    data = rollout[rollout["token_set"] == "all"]
    groups = sorted(data.groupby(["model", "dataset"]), key=lambda kv: kv[0])
    n = len(groups)
    cols = min(n, 4)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(2.6 * cols, 2.2 * rows), squeeze=False)
    for ax, ((model, dataset), g) in zip(axes.flat, groups):
        med = g.groupby("depth")[["kappa_rollout", "product_kappa_half", "product_bound"]].median()
        ax.semilogy(med.index, med["product_bound"], "--", color="0.4", lw=1, label="Π ½(1+κ(A_l))")
        ax.semilogy(med.index, med["product_kappa_half"], ":", color="C3", lw=1.2, label="Π κ(½(I+A_l))")
        ax.semilogy(med.index, med["kappa_rollout"], "-", color="C0", lw=1.4, label="κ(rollout)")
        ax.set_title(f"{model}\n({dataset})", fontsize=7)
        ax.set_xlabel("depth", fontsize=7)
        ax.tick_params(labelsize=6)
    for ax in list(axes.flat)[n:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=6, frameon=False)
    fig.tight_layout()
    return fig


def heatmap_figure(attention: np.ndarray, special: np.ndarray, layer: int, title: str) -> plt.Figure:
    """One input's head-averaged attention in one layer (all tokens).

    White lines frame the special tokens; red squares mark the entries (i,i), (j,j),
    (i,j), (j,i) of the pair of rows at maximal TV distance, whose self-dominance
    decides the condition.
    """
    from rollout_equality.dobrushin import pairwise_tv

    A = attention[layer].astype(np.float64)
    tv = pairwise_tv(A)
    i, j = np.unravel_index(np.argmax(np.triu(tv, 1)), tv.shape)
    fig, ax = plt.subplots(figsize=(4.2, 3.8))
    image = ax.imshow(A, cmap="viridis", norm=matplotlib.colors.PowerNorm(0.4))
    fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04, label="attention")
    for k in np.flatnonzero(special):
        for edge in (k - 0.5, k + 0.5):
            ax.axhline(edge, color="w", lw=0.4)
            ax.axvline(edge, color="w", lw=0.4)
    for r, c in ((i, i), (j, j), (i, j), (j, i)):
        ax.add_patch(matplotlib.patches.Rectangle((c - 0.5, r - 0.5), 1, 1, fill=False, ec="r", lw=1.2))
    dominant = A[i, i] >= A[j, i] and A[j, j] >= A[i, j]
    ax.set_xlabel(f"key token; red: rows {i}, {j} at maximal TV {tv[i, j]:.3f} "
                  f"({'mutually self-dominant' if dominant else 'not self-dominant'})", fontsize=6)
    ax.set_ylabel("query token", fontsize=7)
    ax.set_title(title, fontsize=7)
    fig.tight_layout()
    return fig


def write_figure(fig: plt.Figure, *paths: str | os.PathLike) -> None:
    """Save one figure to every path given (.pdf / .png) and close it."""
    try:
        for path in paths:
            save(fig, path)
    finally:
        plt.close(fig)


def write_suite_figures(record_paths: list, dump_paths: list, out_dir: str | os.PathLike) -> list[Path]:
    """Depth, slack, rollout and heatmap figures of one suite (PDF and PNG) in ``out_dir``."""
    from rollout_equality.records import read_records
    from rollout_equality.tables import depth_rates

    out_dir = Path(out_dir)
    records = pd.concat([read_records(p) for p in record_paths], ignore_index=True)
    rollout = pd.concat([read_records(p, rollout=True) for p in record_paths], ignore_index=True)
    written = []
    for name, fig in (("depth", depth_figure(depth_rates(records))), ("slack", slack_figure(records)),
                      ("rollout", rollout_figure(rollout))):
        paths = [out_dir / f"{name}.pdf", out_dir / f"{name}.png"]
        write_figure(fig, *paths)
        written += paths
    heatmap = [out_dir / "heatmap.pdf", out_dir / "heatmap.png"]
    for dump_path in dump_paths:
        with np.load(dump_path) as npz:
            ids = sorted({k.rsplit("/", 1)[0] for k in npz.files})
            if not ids:
                continue
            attention, special = npz[f"{ids[0]}/attention"], npz[f"{ids[0]}/special"]
        model, dataset = Path(dump_path).parent.name, Path(dump_path).stem
        layer = attention.shape[0] - 1
        row = records[(records["model"] == model) & (records["dataset"] == dataset) & (records["input_id"] == ids[0])
                      & (records["layer"] == layer) & (records["token_set"] == "all")].iloc[0]
        title = f"{model} on {dataset}, input {ids[0]}, last layer (all tokens): condition {'holds' if row['holds'] else 'fails'}"
        write_figure(heatmap_figure(attention, special, layer, title), *heatmap)
        break
    else:  # no model of the suite dumped attention: say so in the figure itself
        fig, ax = plt.subplots(figsize=(4, 1))
        ax.text(0.5, 0.5, "no attention dump in this suite (extraction.dump_inputs = 0)", ha="center", va="center", fontsize=8)
        ax.axis("off")
        write_figure(fig, *heatmap)
    return written + heatmap
