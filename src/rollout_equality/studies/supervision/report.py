"""The supervision study's tables, figure and sentences, from the records of its models and their checkpoints.

The seed is the unit of evidence: each seed's model is one draw of what an objective trains (another machine's
training is another draw), so every statement about an objective is the mean over its seeds with a 95% t interval
across seeds (:func:`across_seeds`); a Wilson interval is only one model's measurement error (its input-layer pairs
counted as independent trials). For every objective (``supervised``, ``dino``) and the control (``init``, each seed's
untrained initialisation), on content tokens and on all tokens:

* ``supervision_depth``: at each layer, the seeds' rates of the condition: their mean, its t interval, their range,
  beside the pooled counts;
* ``supervision_heads``: the same of every head's own attention and of the max and min fusions (the heads files);
* ``supervision_seeds``: per model, of the input-layer pairs that fail, the share at a late layer (normalised depth
  layer / (L − 1) at least ``late_depth``), with its Wilson interval;
* ``supervision_late``: those shares across seeds, per objective;
* ``supervision_contrast``: supervised minus DINO, seed by seed (paired: a seed's initialisation trains both), of the
  late share and of the rate at each layer, across seeds, and where each interval lies against 0;
* ``supervision_scores``: per model, the k-NN accuracy of its frozen CLS features on the test digits against the
  training digits (every model, the controls included), and the supervised models' test accuracy;
* ``supervision_checkpoints``: every file of every checkpoint with its size and SHA-256, and the code path and
  processor that made it;
* ``model_rates`` and ``depth_rates`` as every suite's (:mod:`rollout_equality.reporting.stats`), so that
  ``rollout-equality compare`` reads the folder as it reads a suite's. The tables across seeds derive from
  depth_rates (:func:`seed_tables`).

The figure draws each seed's rate against normalised depth per objective, their mean and its interval shaded;
:func:`sentences` states in words what the tables show, for docs/results.md, and decides the paper's contrast on the
intervals across seeds (:func:`contrast_verdict`), or calls it undecided at this power.
"""

from __future__ import annotations

import logging
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from scipy import stats

from rollout_equality.condition.baseline import interval_row
from rollout_equality.config.paths import SUPERVISION_REPORT
from rollout_equality.reporting.compare import TABLES
from rollout_equality.reporting.stats import normalised_depth
from rollout_equality.runtime.files import require_paths

log = logging.getLogger(__name__)

CONTROL = "init"
ORDER = ("supervised", "dino", CONTROL)
"""Objectives in the tables' order, the control last."""
LABELS = {"supervised": "supervised (cross-entropy)", "dino": "self-supervised (DINO)", CONTROL: "untrained control"}
TOKEN_SETS = ("content", "all")
LEVEL = 0.95
"""The confidence level of the intervals across seeds."""

DEPTH_COLUMNS = list(TABLES["supervision_depth"].columns)
HEAD_COLUMNS = list(TABLES["supervision_heads"].columns)
SEED_COLUMNS = list(TABLES["supervision_seeds"].columns)
LATE_COLUMNS = list(TABLES["supervision_late"].columns)
CONTRAST_COLUMNS = list(TABLES["supervision_contrast"].columns)
SCORE_COLUMNS = list(TABLES["supervision_scores"].columns)
"""The tables' columns, as ``rollout-equality compare`` reads them (:data:`rollout_equality.reporting.compare.TABLES`)."""


def _objective_order(column: pd.Series) -> pd.Series:
    return column.map({o: i for i, o in enumerate(ORDER)}) if column.name == "objective" else column


def across_seeds(values: Sequence[float] | np.ndarray, bounds: tuple[float, float] = (0.0, 1.0)) -> dict[str, float]:
    """The seeds' values with the seed as the unit of evidence: their number (``seeds``), ``mean``, standard deviation
    (``seed_sd``, n − 1 in the denominator), the :data:`LEVEL` t interval of the mean (``ci_low``, ``ci_high``:
    mean ± t(n − 1) · sd / √n, clipped to the values' ``bounds``, a rate's [0, 1]; nan with one seed, whose spread is
    unknown) and the lowest and highest value. Values that are nan (a late share of a model without failures) are
    left out. The half-width a number of seeds reaches is t(n − 1) · sd / √n (:func:`half_width_of`), unclipped."""
    x = np.asarray(values, dtype=float)
    x = x[~np.isnan(x)]
    n = len(x)
    if n == 0:
        return {"seeds": 0, **dict.fromkeys(("mean", "seed_sd", "ci_low", "ci_high", "seed_low", "seed_high"), np.nan)}
    sd = float(x.std(ddof=1)) if n > 1 else np.nan
    half = half_width_of(sd, n)
    mean = float(x.mean())
    low, high = (max(mean - half, bounds[0]), min(mean + half, bounds[1])) if n > 1 else (np.nan, np.nan)
    return {
        "seeds": n,
        "mean": mean,
        "seed_sd": sd,
        "ci_low": low,
        "ci_high": high,
        "seed_low": float(x.min()),
        "seed_high": float(x.max()),
    }


def side(low: float, high: float, threshold: float = 0.0) -> str:
    """Where an interval lies against ``threshold``: ``above`` or ``below`` it, or ``undecided`` when it spans it (or
    is unknown: one seed)."""
    if low > threshold:
        return "above"
    if high < threshold:
        return "below"
    return "undecided"


def half_width_of(sd: float, seeds: int) -> float:
    """The half-width t(n − 1) · sd / √n of the :data:`LEVEL` t interval of a mean over ``seeds`` values whose
    standard deviation is ``sd`` (nan for one seed)."""
    return float(stats.t.ppf((1 + LEVEL) / 2, seeds - 1)) * sd / math.sqrt(seeds) if seeds > 1 else math.nan


def seeds_needed(sd: float, half_width: float, most: int = 1000) -> int | None:
    """The fewest seeds (two or more) whose :data:`LEVEL` t interval of a mean has a half-width t(n − 1) · sd / √n of
    at most ``half_width``, for seeds whose values spread by ``sd``; None for an unknown spread (nan) or more than
    ``most``."""
    if not math.isfinite(sd):
        return None
    for n in range(2, most + 1):
        if half_width_of(sd, n) <= half_width:
            return n
    return None


def seed_counts(frame: pd.DataFrame, keys: Sequence[str] = ()) -> pd.DataFrame:
    """Per model (with its ``objective`` and ``seed``), ``keys``, token set and layer: ``pairs``, ``holds`` and the
    normalised ``depth``, from records (one row per input-layer pair, ``holds`` boolean) or from a table that has
    counted them already (``pairs`` and ``holds`` columns: the study's depth_rates)."""
    group = ["model", "objective", "seed", *keys, "token_set", "layer"]
    if "pairs" not in frame.columns:
        frame = frame.assign(pairs=1, holds=frame["holds"].astype(int))
        frame = frame.assign(depth=normalised_depth(frame["layer"], frame["n_layers"]))
    counts = frame.groupby(group, sort=True).agg(
        pairs=("pairs", "sum"), holds=("holds", "sum"), depth=("depth", "first")
    )
    return counts.reset_index().astype({"seed": int, "pairs": int, "holds": int, "layer": int})


def _by_depth(counts: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys`` + layer, across seeds: each seed's rate (its model's holds over pairs) summarised by
    :func:`across_seeds` (``rate`` their mean, ``ci_low``–``ci_high`` its t interval, ``seed_low``–``seed_high`` their
    range), beside the pooled counts (``pairs``, ``holds``)."""
    rows = []
    for key, g in counts.groupby([*keys, "layer"], sort=True):
        seeds = across_seeds(g["holds"] / g["pairs"])
        rows.append(
            {
                **dict(zip([*keys, "layer"], key)),
                "depth": float(g["depth"].iloc[0]),
                "pairs": int(g["pairs"].sum()),
                "holds": int(g["holds"].sum()),
                "rate": seeds.pop("mean"),
                **seeds,
            }
        )
    return pd.DataFrame(rows).sort_values([*keys, "layer"], key=_objective_order, kind="stable")


def depth_table(counts: pd.DataFrame) -> pd.DataFrame:
    """``supervision_depth`` from the head-averaged records' counts per model and layer (:func:`seed_counts`)."""
    return _by_depth(counts, ["objective", "token_set"])[DEPTH_COLUMNS].reset_index(drop=True)


def head_table(heads: pd.DataFrame) -> pd.DataFrame:
    """``supervision_heads`` from the heads files: every head's own attention (``per head``) and each fusion."""
    heads = heads.assign(attention=np.where(heads["head"].notna(), "per head", heads["fusion"].astype(str)))
    counts = seed_counts(heads, ["attention"])
    return _by_depth(counts, ["objective", "token_set", "attention"])[HEAD_COLUMNS].reset_index(drop=True)


def seeds_table(counts: pd.DataFrame, late_depth: float) -> pd.DataFrame:
    """``supervision_seeds``: per model and token set, of its failing input-layer pairs, how many at a normalised
    depth ≥ ``late_depth``, the share with its Wilson interval (the model's own measurement error: its pairs counted
    as independent trials)."""
    rows = []
    for (model, objective, seed, token_set), g in counts.groupby(["model", "objective", "seed", "token_set"]):
        fails = g["pairs"] - g["holds"]
        failures, late = int(fails.sum()), int(fails[g["depth"] >= late_depth].sum())
        rows.append(
            {
                "model": model,
                "objective": objective,
                "seed": int(seed),
                "token_set": token_set,
                "pairs": int(g["pairs"].sum()),
                "failures": failures,
                **interval_row(late, failures, count="late_failures", share="share"),
            }
        )
    df = pd.DataFrame(rows, columns=SEED_COLUMNS)
    return df.sort_values(["objective", "seed", "token_set"], key=_objective_order, kind="stable").reset_index(
        drop=True
    )


def late_table(seeds: pd.DataFrame) -> pd.DataFrame:
    """``supervision_late``: per objective and token set, the seeds' late shares (:func:`seeds_table`) summarised
    across seeds (:func:`across_seeds`: ``share`` their mean, its t interval, their range), beside the pooled counts."""
    rows = []
    for (objective, token_set), g in seeds.groupby(["objective", "token_set"], sort=True):
        summary = across_seeds(g["share"])
        rows.append(
            {
                "objective": objective,
                "token_set": token_set,
                "pairs": int(g["pairs"].sum()),
                "failures": int(g["failures"].sum()),
                "late_failures": int(g["late_failures"].sum()),
                "share": summary.pop("mean"),
                **summary,
            }
        )
    df = pd.DataFrame(rows, columns=LATE_COLUMNS)
    return df.sort_values(["objective", "token_set"], key=_objective_order, kind="stable").reset_index(drop=True)


def contrast_table(
    counts: pd.DataFrame, seeds: pd.DataFrame, objective: str = "supervised", minus: str = "dino"
) -> pd.DataFrame:
    """``supervision_contrast``: ``objective`` minus ``minus``, seed by seed, per token set: the late share of the
    failures (statistic ``late share``) and the rate at each layer (``rate``), each difference summarised across the
    seeds both objectives trained (:func:`across_seeds`: ``difference`` the mean, its t interval, ``side`` where that
    lies against 0). Paired: a seed's initialisation and data order are shared by both objectives, so that what the
    seed alone decides cancels in its difference. Empty when one of the two objectives was not trained."""
    rows = []
    if {objective, minus} <= set(seeds["objective"]):
        share = seeds.pivot_table(index=["token_set", "seed"], columns="objective", values="share", dropna=False)
        rate = counts.assign(rate=counts["holds"] / counts["pairs"]).pivot_table(
            index=["token_set", "layer", "depth", "seed"], columns="objective", values="rate"
        )
        for token_set in sorted(set(seeds["token_set"])):
            paired = share.loc[token_set]
            statistics = [("late share", pd.NA, np.nan, paired[objective] - paired[minus])]
            by_layer = rate.loc[token_set]
            for (layer, depth), g in by_layer.groupby(level=["layer", "depth"], sort=True):
                statistics.append(("rate", int(layer), float(depth), g[objective] - g[minus]))
            for statistic, layer, depth, differences in statistics:
                summary = across_seeds(differences, bounds=(-1.0, 1.0))
                rows.append(
                    {
                        "token_set": token_set,
                        "statistic": statistic,
                        "layer": layer,
                        "depth": depth,
                        "objective": objective,
                        "minus": minus,
                        "difference": summary.pop("mean"),
                        **summary,
                        "side": side(summary["ci_low"], summary["ci_high"]),
                    }
                )
    return pd.DataFrame(rows, columns=CONTRAST_COLUMNS).astype({"layer": "Int64"})


def knn_accuracy(
    train: torch.Tensor,
    train_labels: torch.Tensor,
    test: torch.Tensor,
    test_labels: torch.Tensor,
    k: int,
    temperature: float,
) -> float:
    """The share of ``test`` features (N, d) whose weighted vote of their ``k`` nearest ``train`` features (cosine
    similarity; each vote weighted by exp(similarity / temperature), as DINO's evaluation) is their label."""
    train = torch.nn.functional.normalize(train.double(), dim=1)
    test = torch.nn.functional.normalize(test.double(), dim=1)
    k = min(k, len(train))
    similarity, index = (test @ train.T).topk(k, dim=1)
    votes = torch.zeros(len(test), int(train_labels.max()) + 1, dtype=torch.float64)
    votes.scatter_add_(1, train_labels[index], (similarity / temperature).exp())
    return float((votes.argmax(dim=1) == test_labels).double().mean())


def scores_table(
    models: Sequence[str],
    runs: Sequence[Mapping[str, Any]],
    checkpoints: Sequence[str | os.PathLike],
    train_data: str | os.PathLike,
    test_data: str | os.PathLike,
    knn: Mapping[str, Any],
) -> pd.DataFrame:
    """``supervision_scores``: each checkpoint's k-NN accuracy on the prepared digits and what its training
    recorded."""
    import json

    from rollout_equality.acquire.extract.timm_backend import load_timm
    from rollout_equality.studies.supervision.train import INFO, load_digits
    from rollout_equality.studies.supervision.vit import cls_features

    rows, data = [], None
    for model_name, run, folder in zip(models, runs, checkpoints, strict=True):
        info = json.loads((Path(folder) / INFO).read_text())
        model = load_timm(folder).float().eval()
        if data is None:  # every model of the study shares one architecture and preprocessing
            data = (*load_digits(train_data, model), *load_digits(test_data, model))
        x, y, tx, ty = data
        accuracy = knn_accuracy(cls_features(model, x), y, cls_features(model, tx), ty, knn["k"], knn["temperature"])
        log.info("%s: k-NN accuracy %.4f", model_name, accuracy)
        rows.append(
            {
                "model": model_name,
                "objective": run["objective"],
                "seed": int(run["seed"]),
                "n_train": len(y),
                "n_test": len(ty),
                "epochs": info.get("settings", {}).get("epochs", 0),
                "test_accuracy": info.get("test_accuracy", np.nan),
                "knn_accuracy": accuracy,
            }
        )
    return pd.DataFrame(rows, columns=SCORE_COLUMNS)


CHECKPOINT_COLUMNS = ["model", "objective", "seed", "file", "bytes", "sha256", "code_path", "cpu"]


def checkpoints_table(
    models: Sequence[str], runs: Sequence[Mapping[str, Any]], checkpoints: Sequence[str | os.PathLike]
) -> pd.DataFrame:
    """``supervision_checkpoints``: each file of each checkpoint folder, its size and SHA-256, beside the code path
    and the processor that made the checkpoint (its ``training.json``): a machine of another family that trains the
    same weights shows the same ``model.safetensors`` digest (``rollout-equality compare`` reads it)."""
    import json

    from rollout_equality.runtime import digests
    from rollout_equality.studies.supervision.train import INFO

    rows = []
    for name, run, folder in zip(models, runs, checkpoints, strict=True):
        info = json.loads((Path(folder) / INFO).read_text())
        for path in sorted(Path(folder).iterdir()):
            if path.is_file() and not path.name.startswith("."):
                rows.append(
                    {
                        "model": name,
                        "objective": run["objective"],
                        "seed": int(run["seed"]),
                        "file": path.name,
                        "bytes": path.stat().st_size,
                        "sha256": digests.of_file(path),
                        "code_path": info.get("code_path", ""),
                        "cpu": info.get("cpu", ""),
                    }
                )
    return pd.DataFrame(rows, columns=CHECKPOINT_COLUMNS)


def figure(depth: pd.DataFrame, counts: pd.DataFrame):
    """Rate against normalised depth per objective, content and all tokens side by side: each seed's rate (thin
    lines), their mean (markers) and its t interval across seeds (shaded; clipped to [0, 1])."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4), sharey=True)
    for ax, token_set in zip(axes, TOKEN_SETS):
        for objective in ORDER:
            g = depth[(depth["objective"] == objective) & (depth["token_set"] == token_set)]
            if g.empty:
                continue
            (line,) = ax.plot(g["depth"], g["rate"], marker="o", label=LABELS[objective])
            ax.fill_between(
                g["depth"], g["ci_low"].clip(0, 1), g["ci_high"].clip(0, 1), color=line.get_color(), alpha=0.2, lw=0
            )
            own = counts[(counts["objective"] == objective) & (counts["token_set"] == token_set)]
            for _, seed in own.groupby("seed"):
                seed = seed.sort_values("layer")
                ax.plot(seed["depth"], seed["holds"] / seed["pairs"], color=line.get_color(), lw=0.7, alpha=0.45)
        ax.set_title(f"{token_set} tokens")
        ax.set_xlabel("normalised depth layer / (L - 1)")
        ax.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("rate of the condition")
    axes[1].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def _percent(x: float) -> str:
    return f"{100 * x:.0f}%"


def _points(x: float) -> str:
    return f"{100 * x:+.0f}" if round(100 * x) else "0"


def _span(values: pd.Series) -> str:
    """``a%`` when the seeds agree to the percent, else ``a%–b%``."""
    low, high = _percent(values.min()), _percent(values.max())
    return low if low == high else f"{low}–{high}"


def _seeds(n: int) -> str:
    return "1 seed" if n == 1 else f"{n} seeds"


def _interval(row: Mapping[str, Any], value: str) -> str:
    """``m% (a% to b%)`` of a row summarised across seeds (its t interval); ``m%`` alone with one seed."""
    if not math.isfinite(row["ci_low"]):
        return _percent(row[value])
    return f"{_percent(row[value])} ({_percent(row['ci_low'])} to {_percent(row['ci_high'])})"


def _layers(layers: Sequence[int]) -> str:
    return ("layer " if len(layers) == 1 else "layers ") + ", ".join(str(int(layer)) for layer in layers)


def contrast_verdict(
    late: pd.DataFrame, contrast: pd.DataFrame, late_depth: float, token_set: str = "content"
) -> tuple[str, list[str], list[str], list[str]]:
    """Whether the paper's contrast appears, decided on the intervals across seeds (``token_set``'s rows of
    :func:`late_table` and :func:`contrast_table`): ``appears``, ``does not appear`` or ``undecided``, with the
    decided findings in its favour, those against it and the questions left undecided. Its four parts:

    * most supervised failures are late: the supervised late share's interval above one half (below: against);
    * the supervised failures lie later than the self-supervised ones: the paired difference of the late shares
      above 0 (below: against);
    * at a late layer (normalised depth ≥ ``late_depth``) the supervised models hold the condition less often: the
      paired difference of the rates below 0 at one late layer at least;
    * at no layer do they hold it more often: a layer whose difference lies above 0 is against (and so is every late
      layer's).

    Against wins over undecided: one decided finding against is enough for ``does not appear``."""
    sup = late[(late["objective"] == "supervised") & (late["token_set"] == token_set)]
    rows = contrast[contrast["token_set"] == token_set]
    share = rows[rows["statistic"] == "late share"]
    rates = rows[rows["statistic"] == "rate"]
    if sup.empty or share.empty:
        raise ValueError("contrast_verdict needs the supervised and the self-supervised (DINO) models")
    found, against, undecided = [], [], []
    majority = side(float(sup["ci_low"].iloc[0]), float(sup["ci_high"].iloc[0]), 0.5)
    if majority == "above":
        found.append("most supervised failures are late")
    elif majority == "below":
        against.append("fewer than half of the supervised failures are late (the interval lies below one half)")
    elif majority == "undecided":
        undecided.append("whether most supervised failures are late (the interval spans one half)")
    later = share["side"].iloc[0]
    if later == "above":
        found.append("the supervised failures lie later than DINO's")
    elif later == "below":
        against.append("the supervised failures lie earlier than DINO's (the paired difference lies below 0)")
    elif later == "undecided":
        undecided.append("whether they lie later than DINO's (the paired difference spans 0)")
    higher = rates.loc[rates["side"] == "above", "layer"].tolist()
    if higher:
        against.append(f"at {_layers(higher)} the supervised models hold the condition more often")
    late_rates = rates[rates["depth"] >= late_depth]
    lower = late_rates.loc[late_rates["side"] == "below", "layer"].tolist()
    if lower:
        found.append(f"at late {_layers(lower)} the supervised models hold the condition less often")
    elif not (len(late_rates) and (late_rates["side"] == "above").all()):
        undecided.append("whether they hold it less often at a late layer (no late layer's difference lies below 0)")
    verdict = "does not appear" if against else "undecided" if undecided else "appears"
    return verdict, found, against, undecided


def sentences(
    depth: pd.DataFrame,
    late: pd.DataFrame,
    contrast: pd.DataFrame,
    scores: pd.DataFrame,
    late_depth: float,
    half_width: float,
) -> str:
    """What the tables show, in words (Markdown), for docs/results.md, every statement about an objective with its
    interval across seeds (:data:`LEVEL`): whether each model learned, the rates of the objectives on content tokens
    at the last layer, where the failures are, the paired contrast of supervised and self-supervised with the
    half-width it reached against ``half_width`` (and the seeds its measured spread needs for that), and whether
    that is the paper's contrast (:func:`contrast_verdict`), or undecided at this power; short of ``appears``, the
    decided findings for it and the questions left undecided follow."""
    by = scores.groupby("objective")
    parts = []
    if "supervised" in by.groups:
        acc = by.get_group("supervised")["test_accuracy"]
        parts.append(
            f"The supervised models reach a test accuracy of {_span(acc)} on the {int(scores['n_test'].iloc[0]):,} "
            f"test digits ({_seeds(len(acc))})."
        )
    knn = {o: by.get_group(o)["knn_accuracy"] for o in ORDER if o in by.groups}
    knn_text = "; ".join(f"{LABELS[o]} {_span(v)}" for o, v in knn.items())
    parts.append(f"The k-NN accuracy of frozen CLS features, across seeds: {knn_text}.")
    content = depth[depth["token_set"] == "content"]
    last = content[content["depth"] == content["depth"].max()].set_index("objective")
    seeds = int(content["seeds"].max())
    parts.append(
        f"Each number below is the mean over the {seeds} seeds with its {LEVEL:.0%} t interval across seeds in "
        "brackets: the seed, not the input-layer pair, is the unit of evidence."
        if seeds > 1
        else "Each number below is the one seed's: with one seed the seeds' spread is unknown, and no statement "
        "across seeds is decided."
    )
    parts.append(
        "On content tokens the condition holds at the last layer for: "
        + "; ".join(f"{LABELS[o]} {_interval(last.loc[o], 'rate')}" for o in ORDER if o in last.index)
        + "."
    )
    late_c = late[late["token_set"] == "content"].set_index("objective")
    parts.append(
        f"The share of the content-token failures at a late layer (normalised depth at least {late_depth:g}): "
        + "; ".join(f"{LABELS[o]} {_interval(late_c.loc[o], 'share')}" for o in ORDER if o in late_c.index)
        + "."
    )
    rows = contrast[contrast["token_set"] == "content"]
    if len(rows):
        share = rows[rows["statistic"] == "late share"].iloc[0]
        rates = rows[rows["statistic"] == "rate"]
        if math.isfinite(share["ci_low"]):
            reached = half_width_of(float(share["seed_sd"]), int(share["seeds"]))
            needed = seeds_needed(float(share["seed_sd"]), half_width)
            parts.append(
                "Supervised minus self-supervised, seed by seed (paired: each seed's initialisation trains both), the "
                f"late share differs by {_points(share['difference'])} points ({_points(share['ci_low'])} to "
                f"{_points(share['ci_high'])})."
            )
            parts.append(
                f"That interval's half-width is {100 * reached:.1f} points with {int(share['seeds'])} seeds; the aim "
                f"is at most {100 * half_width:g}, which the seeds' measured spread ({100 * share['seed_sd']:.1f} "
                + (f"points) reaches with {needed} seeds." if needed else "points) reaches with no number of seeds.")
            )
        lower, higher = (rates.loc[rates["side"] == s, "layer"].tolist() for s in ("below", "above"))
        open_ = rates.loc[rates["side"] == "undecided", "layer"].tolist()
        per_layer = [
            f"lower at {_layers(lower)}" if lower else "",
            f"higher at {_layers(higher)}" if higher else "",
            f"undecided at {_layers(open_)}" if open_ else "",
        ]
        parts.append(
            "The supervised rate on content tokens against the self-supervised one, layer by layer (the paired "
            "difference's interval): " + "; ".join(p for p in per_layer if p) + "."
        )
        verdict, found, against, undecided = contrast_verdict(late, contrast, late_depth)
        if verdict == "appears":
            parts.append(
                "The paper's contrast appears at this scale: most supervised failures are late, later than the "
                "self-supervised ones, and at a late layer the supervised models hold the condition less often, at "
                "none more often (each decided on the intervals across seeds)."
            )
        elif verdict == "does not appear":
            parts.append("The paper's contrast does not appear at this scale: " + "; ".join(against) + ".")
        else:
            parts.append("Whether the paper's contrast appears at this scale is undecided at this power.")
        if verdict != "appears":
            parts += [
                f"{head}: {'; '.join(items)}." for head, items in [("For it", found), ("Undecided", undecided)] if items
            ]
    return " ".join(parts) + "\n"


def seed_tables(rates: pd.DataFrame, runs: Mapping[str, tuple[str, int]], late_depth: float) -> dict[str, pd.DataFrame]:
    """The study's tables across seeds from its ``depth_rates`` (per model, token set and layer: pairs and holds) and
    each model's (objective, seed) in ``runs``: ``counts`` (:func:`seed_counts`), ``supervision_depth``,
    ``supervision_seeds``, ``supervision_late`` and ``supervision_contrast``. The report writes them; the documents
    derive them from the kept depth_rates.csv alike."""
    unknown = sorted(set(rates["model"]) - set(runs))
    if unknown:
        raise ValueError(f"depth rates of {unknown}, which is not a model of the study")
    counts = seed_counts(
        rates.assign(
            objective=rates["model"].map(lambda m: runs[m][0]), seed=rates["model"].map(lambda m: int(runs[m][1]))
        )
    )
    seeds = seeds_table(counts, late_depth)
    return {
        "counts": counts,
        "supervision_depth": depth_table(counts),
        "supervision_seeds": seeds,
        "supervision_late": late_table(seeds),
        "supervision_contrast": contrast_table(counts, seeds),
    }


def report_supervision(
    records: Sequence[str | os.PathLike],
    heads: Sequence[str | os.PathLike],
    models: Sequence[str],
    runs: Sequence[Mapping[str, Any]],
    checkpoints: Sequence[str | os.PathLike],
    train_data: str | os.PathLike,
    test_data: str | os.PathLike,
    knn: Mapping[str, Any],
    late_depth: float,
    half_width: float,
    out: Mapping[str, str | os.PathLike],
) -> dict[str, pd.DataFrame]:
    """Every table, the figure and the sentences of the study (``out``: the keys of
    :data:`rollout_equality.config.paths.SUPERVISION_REPORT`). ``records``, ``heads``, ``models``, ``runs``
    (``{objective, seed}``) and ``checkpoints`` are in one order, one per model; ``half_width`` is the aim for the
    contrast's interval (config ``supervision.half_width``)."""
    from rollout_equality.condition.records import read_records
    from rollout_equality.reporting.stats import depth_rates, model_rates, with_seeds
    from rollout_equality.reporting.writers import write_csv, write_html
    from rollout_equality.runtime.files import atomic_path, write_text

    require_paths(out, SUPERVISION_REPORT, "report_supervision")
    if not (len(records) == len(heads) == len(models) == len(runs) == len(checkpoints)):
        raise ValueError("report_supervision: records, heads, models, runs and checkpoints must be one per model")
    tag = {m: (r["objective"], int(r["seed"])) for m, r in zip(models, runs)}

    def tagged(frame: pd.DataFrame) -> pd.DataFrame:
        unknown = sorted(set(frame["model"]) - set(tag))
        if unknown:
            raise ValueError(f"report_supervision: records of {unknown}, which is not a model of the study")
        return frame.assign(
            objective=frame["model"].map(lambda m: tag[m][0]), seed=frame["model"].map(lambda m: tag[m][1])
        )

    layer = pd.concat([read_records(p) for p in records], ignore_index=True)
    head_rows = tagged(pd.concat([read_records(p) for p in heads], ignore_index=True))
    tables = {
        "model_rates": with_seeds(model_rates(layer), layer),
        "depth_rates": depth_rates(layer),
    }
    across = seed_tables(tables["depth_rates"], tag, late_depth)
    counts = across.pop("counts")
    tables.update(across)
    tables["heads"] = head_table(head_rows)
    tables["supervision_scores"] = scores_table(models, runs, checkpoints, train_data, test_data, knn)
    tables["checkpoints"] = checkpoints_table(models, runs, checkpoints)
    for key, df in tables.items():
        write_csv(df, out[key])
    write_html(
        pd.concat(
            [
                tables["supervision_scores"].assign(table="scores"),
                tables["supervision_contrast"].assign(table="supervised minus DINO"),
                tables["supervision_late"].assign(table="late share"),
                tables["supervision_depth"].assign(table="rate by depth"),
            ],
            ignore_index=True,
        ),
        out["html"],
        "Supervision study: accuracies, the contrast, late share of the failures, rate by depth (across seeds)",
    )
    fig = figure(tables["supervision_depth"], counts)
    for key in ("pdf", "png"):
        with atomic_path(out[key]) as tmp:
            fig.savefig(tmp, format=key, dpi=150 if key == "png" else None)
    write_text(
        out["sentences"],
        sentences(
            tables["supervision_depth"],
            tables["supervision_late"],
            tables["supervision_contrast"],
            tables["supervision_scores"],
            late_depth,
            half_width,
        ),
    )
    return tables
