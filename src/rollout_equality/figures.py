"""Figures of the paper (matplotlib, PDF for the paper, PNG for the README and report)."""

from __future__ import annotations

import os
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
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
    fig = baseline_figure(df)
    try:
        for path in paths:
            save(fig, path)
    finally:
        plt.close(fig)
