"""The supervision study's tables, figure and sentences, from the records of its models and their checkpoints.

For every objective (``supervised``, ``dino``) and the control (``init``, each seed's untrained initialisation), on
content tokens and on all tokens:

* ``supervision_depth``: the rate of the condition at each layer over every seed's input-layer pairs, its Wilson 95%
  interval (every pair counted as an independent trial, as the suite tables count them), and the band of the seeds'
  own rates (lowest and highest);
* ``supervision_heads``: the same of every head's own attention and of the max and min fusions (the heads files);
* ``supervision_late``: of the input-layer pairs that fail, the share at a late layer (normalised depth
  layer / (L − 1) at least ``late_depth``), with its Wilson interval;
* ``supervision_scores``: per model, the k-NN accuracy of its frozen CLS features on the test digits against the
  training digits (every model, the controls included), and the supervised models' test accuracy;
* ``supervision_checkpoints``: every file of every checkpoint with its size and SHA-256;
* ``model_rates`` and ``depth_rates`` as every suite's (:mod:`rollout_equality.reporting.stats`), so that
  ``rollout-equality compare`` reads the folder as it reads a suite's.

The figure draws the rate against normalised depth per objective, the seeds' band shaded; :func:`sentences` states in
words what the tables show, for docs/results.md.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

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

DEPTH_COLUMNS = list(TABLES["supervision_depth"].columns)
HEAD_COLUMNS = list(TABLES["supervision_heads"].columns)
LATE_COLUMNS = list(TABLES["supervision_late"].columns)
SCORE_COLUMNS = list(TABLES["supervision_scores"].columns)
"""The tables' columns, as ``rollout-equality compare`` reads them (:data:`rollout_equality.reporting.compare.TABLES`)."""


def _objective_order(column: pd.Series) -> pd.Series:
    return column.map({o: i for i, o in enumerate(ORDER)}) if column.name == "objective" else column


def _by_depth(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    """Per ``keys`` + layer: pooled rate with its Wilson interval and the band of the per-seed rates."""
    rows = []
    for key, g in df.groupby([*keys, "layer"], sort=True):
        per_seed = g.groupby("seed")["holds"].mean()
        rows.append(
            {
                **dict(zip([*keys, "layer"], key)),
                "depth": float(normalised_depth(g["layer"].iloc[0], int(g["n_layers"].iloc[0]))),
                "seeds": len(per_seed),
                "pairs": len(g),
                **interval_row(int(g["holds"].sum()), len(g)),
                "seed_low": float(per_seed.min()),
                "seed_high": float(per_seed.max()),
            }
        )
    return pd.DataFrame(rows).sort_values([*keys, "layer"], key=_objective_order, kind="stable")


def depth_table(layer: pd.DataFrame) -> pd.DataFrame:
    """``supervision_depth`` from the head-averaged records (with ``objective`` and ``seed`` columns)."""
    return _by_depth(layer, ["objective", "token_set"])[DEPTH_COLUMNS].reset_index(drop=True)


def head_table(heads: pd.DataFrame) -> pd.DataFrame:
    """``supervision_heads`` from the heads files: every head's own attention (``per head``) and each fusion."""
    heads = heads.assign(attention=np.where(heads["head"].notna(), "per head", heads["fusion"].astype(str)))
    return _by_depth(heads, ["objective", "token_set", "attention"])[HEAD_COLUMNS].reset_index(drop=True)


def late_table(layer: pd.DataFrame, late_depth: float) -> pd.DataFrame:
    """``supervision_late``: of the failing input-layer pairs, how many at a normalised depth ≥ ``late_depth``."""
    layer = layer.assign(depth=normalised_depth(layer["layer"], layer["n_layers"]))
    rows = []
    for (objective, token_set), g in layer.groupby(["objective", "token_set"], sort=True):
        fails = g[~g["holds"].astype(bool)]
        late = int((fails["depth"] >= late_depth).sum())
        rows.append(
            {
                "objective": objective,
                "token_set": token_set,
                "pairs": len(g),
                "failures": len(fails),
                **interval_row(late, len(fails), count="late_failures", share="share"),
            }
        )
    df = pd.DataFrame(rows, columns=LATE_COLUMNS)
    return df.sort_values(["objective", "token_set"], key=_objective_order, kind="stable").reset_index(drop=True)


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


def checkpoints_table(
    models: Sequence[str], runs: Sequence[Mapping[str, Any]], checkpoints: Sequence[str | os.PathLike]
) -> pd.DataFrame:
    """``supervision_checkpoints``: each file of each checkpoint folder, its size and SHA-256."""
    from rollout_equality.runtime import digests

    rows = [
        {
            "model": name,
            "objective": run["objective"],
            "seed": int(run["seed"]),
            "file": path.name,
            "bytes": path.stat().st_size,
            "sha256": digests.of_file(path),
        }
        for name, run, folder in zip(models, runs, checkpoints, strict=True)
        for path in sorted(Path(folder).iterdir())
        if path.is_file() and not path.name.startswith(".")
    ]
    return pd.DataFrame(rows, columns=["model", "objective", "seed", "file", "bytes", "sha256"])


def figure(depth: pd.DataFrame):
    """Rate against normalised depth per objective, content and all tokens side by side: the pooled rate with its
    Wilson interval (error bars) and the seeds' band (shaded)."""
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
            ax.fill_between(g["depth"], g["seed_low"], g["seed_high"], color=line.get_color(), alpha=0.2, lw=0)
            ax.errorbar(
                g["depth"],
                g["rate"],
                yerr=[g["rate"] - g["ci_low"], g["ci_high"] - g["rate"]],
                fmt="none",
                ecolor=line.get_color(),
                capsize=2,
            )
        ax.set_title(f"{token_set} tokens")
        ax.set_xlabel("normalised depth layer / (L - 1)")
        ax.set_ylim(-0.02, 1.02)
    axes[0].set_ylabel("rate of the condition")
    axes[1].legend(loc="lower left", fontsize=8)
    fig.tight_layout()
    return fig


def _percent(x: float) -> str:
    return f"{100 * x:.0f}%"


def _span(values: pd.Series) -> str:
    """``a%`` when the seeds agree to the percent, else ``a%–b%``."""
    low, high = _percent(values.min()), _percent(values.max())
    return low if low == high else f"{low}–{high}"


def sentences(depth: pd.DataFrame, late: pd.DataFrame, scores: pd.DataFrame, late_depth: float) -> str:
    """What the tables show, in words (Markdown), for docs/results.md: whether each model learned, how the rates of
    the two objectives compare on content tokens at the last layer and over all layers, where the failures are, and
    whether that is the paper's contrast (self-supervised holding at every layer, supervised failing late)."""
    by = scores.groupby("objective")
    parts = []
    if "supervised" in by.groups:
        acc = by.get_group("supervised")["test_accuracy"]
        parts.append(
            f"The supervised models reach a test accuracy of {_span(acc)} on the {int(scores['n_test'].iloc[0]):,} "
            f"test digits ({len(acc)} seeds)."
        )
    knn = {o: by.get_group(o)["knn_accuracy"] for o in ORDER if o in by.groups}
    knn_text = "; ".join(f"{LABELS[o]} {_span(v)}" for o, v in knn.items())
    parts.append(f"The k-NN accuracy of frozen CLS features, across seeds: {knn_text}.")
    content = depth[depth["token_set"] == "content"]
    overall = content.groupby("objective").apply(lambda g: g["holds"].sum() / g["pairs"].sum(), include_groups=False)
    last = content[content["depth"] == content["depth"].max()].set_index("objective")
    rate_text = "; ".join(
        f"{LABELS[o]} {_percent(overall[o])} over all layers, {_percent(last.loc[o, 'rate'])} at the last"
        for o in ORDER
        if o in overall.index
    )
    parts.append(f"On content tokens the condition holds for: {rate_text}.")
    late_c = late[late["token_set"] == "content"].set_index("objective")
    late_text = "; ".join(
        f"{LABELS[o]} {_percent(late_c.loc[o, 'share'])} of {int(late_c.loc[o, 'failures']):,}"
        if late_c.loc[o, "failures"]
        else f"{LABELS[o]} none fail"
        for o in ORDER
        if o in late_c.index
    )
    parts.append(
        f"The share of the content-token failures at a late layer (normalised depth at least {late_depth:g}): "
        f"{late_text}."
    )
    spread = content.assign(width=content["seed_high"] - content["seed_low"]).groupby("objective")["width"].max()
    if (spread > 0).any():
        widest = (content["ci_high"] - content["ci_low"]).max()
        parts.append(
            "The seeds differ more than the pooled Wilson intervals (which count every input-layer pair as an "
            f"independent trial, at most {100 * widest:.0f} points wide) suggest: at one layer, the seeds' own rates "
            "span up to "
            + "; ".join(f"{100 * spread[o]:.0f} points ({LABELS[o]})" for o in ORDER if o in spread.index)
            + "."
        )
    if {"supervised", "dino"} <= set(overall.index):
        sup, ssl = content[content["objective"] == "supervised"], content[content["objective"] == "dino"]
        lower_late = (
            sup.loc[sup["depth"] >= late_depth, "ci_high"].to_numpy()
            < ssl.loc[ssl["depth"] >= late_depth, "ci_low"].to_numpy()
        ).any()
        dino_everywhere = not bool((sup["ci_low"].to_numpy() > ssl["ci_high"].to_numpy()).any())
        late_sup = late_c.loc["supervised"]
        late_failing = late_sup["failures"] > 0 and late_sup["ci_low"] > 0.5
        if lower_late and dino_everywhere and late_failing:
            verdict = (
                "The paper's contrast appears at this scale: at no layer do the supervised models hold the condition "
                "more often than the self-supervised ones (Wilson intervals apart), at a late layer they hold it less "
                "often (intervals apart), and most of their failures are late."
            )
        else:
            missing = [
                what
                for what, ok in (
                    (
                        "no late layer where the supervised rate lies below the self-supervised one with their Wilson "
                        "intervals apart",
                        lower_late,
                    ),
                    (
                        "a layer where the supervised rate lies above the self-supervised one with their Wilson "
                        "intervals apart",
                        dino_everywhere,
                    ),
                    (
                        "no majority of late layers among the supervised failures (Wilson interval above one half)",
                        late_failing,
                    ),
                )
                if not ok
            ]
            verdict = (
                "The paper's contrast does not appear at this scale as the paper reports it: the tables show "
                + "; ".join(missing)
                + "."
            )
        parts.append(verdict)
    return " ".join(parts) + "\n"


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
    out: Mapping[str, str | os.PathLike],
) -> dict[str, pd.DataFrame]:
    """Every table, the figure and the sentences of the study (``out``: the keys of
    :data:`rollout_equality.config.paths.SUPERVISION_REPORT`). ``records``, ``heads``, ``models``, ``runs``
    (``{objective, seed}``) and ``checkpoints`` are in one order, one per model."""
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
    layer = tagged(layer)
    tables["supervision_depth"] = depth_table(layer)
    tables["supervision_late"] = late_table(layer, late_depth)
    tables["heads"] = head_table(head_rows)
    tables["supervision_scores"] = scores_table(models, runs, checkpoints, train_data, test_data, knn)
    tables["checkpoints"] = checkpoints_table(models, runs, checkpoints)
    for key, df in tables.items():
        write_csv(df, out[key])
    write_html(
        pd.concat(
            [
                tables["supervision_scores"].assign(table="scores"),
                tables["supervision_late"].assign(table="late share"),
                tables["supervision_depth"].assign(table="rate by depth"),
            ],
            ignore_index=True,
        ),
        out["html"],
        "Supervision study: accuracies, late share of the failures, rate by depth",
    )
    fig = figure(tables["supervision_depth"])
    for key in ("pdf", "png"):
        with atomic_path(out[key]) as tmp:
            fig.savefig(tmp, format=key, dpi=150 if key == "png" else None)
    write_text(
        out["sentences"],
        sentences(tables["supervision_depth"], tables["supervision_late"], tables["supervision_scores"], late_depth),
    )
    return tables
