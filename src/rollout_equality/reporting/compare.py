"""Does one run reproduce another? A statistical comparison of two runs' tables folders.

A tables folder is a run's ``results/tables/<suite>/`` (or docs/offline/, which keeps the offline suite's). Rows are
matched by key in each table of :data:`TABLES` that both folders hold; a row whose CSV line is the same bytes in both
is **identical**, a row of one folder only is **missing**, and every other row is tested:

* a **proportion** (``holds`` of ``pairs``; ``agreement``, ``tight_half`` and ``tight_bound``, whose counts are
  the share times its total, as the table prints it to 6 decimals) with Fisher's exact test on the 2×2 table of
  successes and failures (:func:`scipy.stats.fisher_exact`, two-sided). Boschloo's test is more powerful but
  took ~100 s for one row of 1,500 pairs here, Fisher's milliseconds. Like the tables' Wilson intervals, the test
  counts every input-layer pair as an independent trial;
* a **continuous** value of a seeded run (an FT-Transformer's test score, its epochs, its rollout medians) against
  the spread across seeds: another machine trains other weights, as another seed does, so the difference of the
  two runs' values is set against the difference of two seeds, ``t = Δ / (s·√2)`` with ``s`` the seeds' standard
  deviation pooled over both runs and over every table (every data set of the same metric) with two or more seeds,
  ``p`` from Student's t with the pooled degrees of freedom (:data:`scipy.stats.t`). A table of one seed borrows
  the spread of the others; with no table of two seeds there is no spread, and a moved value is different;
* a **continuous** value of a run without seeds (a transformer's rollout medians, a deterministic forward pass):
  within :data:`ROUNDING_ATOL`, else different (no test: only rounding moves it);
* the **measured things** (inputs, pairs, the normalised depth, a table's metric, a claim's claimed range): must
  be equal, else the rows measured different things and are different;
* a **claim's status** that changed (``reproduced`` → ``not reproduced``) is always different; its numbers
  (``ours``, ``note``) are the rates tested in the tables they come from;
* a row of a data set whose prepared inputs differ (its manifest's digest in the folders' ``inputs.csv``,
  :func:`read_inputs`) was **measured on other inputs**: class ``other inputs``, not tested (a difference there
  says nothing about reproducing). Where one folder has no ``inputs.csv`` (tables written before it existed), the
  inputs are not compared, and the report says so.

A **trained model's rows** (the supervision study's: the folders' :data:`CHECKPOINTS` tables give each model's weights'
SHA-256) are tested according to its checkpoints, and each such row's line says which test applied:

* the **same checkpoints** in both folders are the same model: its rows are tested as above (Fisher's test of its
  proportions): only the measuring can have moved them;
* **checkpoints that differ** are another draw of the training, as another seed is (another processor trains other
  weights from the same seed): its rows are set against the spread across seeds, as a seeded FT-Transformer's are.
  A model's rate (a row of model_rates, depth_rates, supervision_seeds) against the standard deviation of its
  objective's other seeds at the same key, pooled over both runs: ``t = Δ / (s·√2)`` (the model itself left out of
  ``s``, so that a draw far from the others is not hidden by the spread it adds). A mean over n seeds of which k were
  retrained (supervision_depth, supervision_heads, supervision_late, supervision_contrast: their ``seed_sd``, pooled
  over both runs) against ``s·√(2k)/n``, with 2(n − 1) degrees of freedom. Its pooled counts are not tested by
  Fisher's test: they are not one model's trials.

**Multiple comparisons:** the p-values of every test of every matched row (identical rows included, with p = 1: the
family is fixed before the data are looked at) are adjusted by Holm's step-down method (:func:`holm`), which keeps
the chance of calling any row different when none is at most ``alpha``. A row is **different** when one of its
adjusted p-values is below ``alpha``, else **within uncertainty**.

Derived columns (``rate``, ``ci_low``, ``ci_high``, ``share``, ``failing_all``) follow from the tested ones;
ftt.csv repeats ftt_scores.csv and model_rates.csv and is not compared. Tables carry no version number: a table's
header is its schema, and a table whose columns are not the ones this version writes (:data:`TABLES`) is bad
input, as is a folder without model_rates.csv.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

from rollout_equality.config.paths import SUITE_TABLES_DIR
from rollout_equality.reporting.claims import COLUMNS as CLAIM_COLUMNS
from rollout_equality.reporting.stats import SPECIAL_TOKEN_COLUMNS

ALPHA = 0.05
"""The family-wise error rate Holm's correction keeps: the chance of calling any row different when none is."""
ROUNDING_ATOL = 1e-5
"""How far a continuous value of a run without seeds may move and stay within uncertainty: >10× the largest κ
movement measured between CPU code paths (7e-7, docs/outputs.md, Reproducibility), 10 units of the tables' sixth
decimal."""
CLASSES = ("identical", "within uncertainty", "different", "other inputs", "missing")
INPUTS = "inputs"
"""The table of the data sets a run measured, each with its manifest's digest (``inputs.csv``, written with the
suite's tables): rows of a data set whose digest differs were measured on other inputs."""


CHECKPOINTS = "supervision_checkpoints"
"""The table of a folder's trained models' checkpoints (model, objective, seed, file, sha256, …; the supervision
study's): a model whose weights (:data:`WEIGHTS`) have another SHA-256 in the other folder was retrained."""
WEIGHTS = "model.safetensors"
"""The file of a checkpoint that holds its weights (the others record how it was made)."""
DRAWS = {
    "model": "the row's model",
    "objective": "its objective's seeds (the row's mean over them, their spread in seed_sd)",
    "contrast": "its objective's and its minus's, seed by seed (the paired differences' mean, their spread in seed_sd)",
}
"""Whose trained checkpoints a table's row measures (:attr:`Table.draws`)."""
SAME_MODEL, RETRAINED = "same model", "retrained"
"""The tests a trained model's row gets: its checkpoints the same bytes in both folders (the same model: the tests
of any row), or not (another draw: tested against the seeds' spread)."""


class BadTables(ValueError):
    """A folder that is not a tables folder, or tables of another schema: the message names the folder and what
    is missing (the command line exits 2)."""


@dataclass(frozen=True)
class Proportion:
    """A binomial proportion of a table: ``successes`` (a count column) or ``share`` (a share column, its count the
    share times ``total``) out of ``total``."""

    label: str
    total: str
    successes: str | None = None
    share: str | None = None


@dataclass(frozen=True)
class Table:
    """How a table is compared: its key, its header, what must be equal, what is tested."""

    name: str  # the CSV's stem
    key: tuple[str, ...]
    columns: tuple[str, ...]  # the header this version writes, in order
    same: tuple[str, ...] = ()  # what was measured: must be equal
    proportions: tuple[Proportion, ...] = ()
    continuous: tuple[str, ...] = ()
    spread_group: tuple[str, ...] = ()  # a continuous value's seeds: rows that differ by seed only
    spread_pool: tuple[str, ...] = ()  # whose seed spreads are pooled (one scale: the same metric)
    status: str | None = None  # a verdict that must not change
    seed: str | None = None  # the run's training seed, or None: read from model_rates.csv by (model, dataset)
    draws: str | None = None  # whose trained checkpoints a row measures (:data:`DRAWS`), or None: no trained model's
    seed_means: tuple[str, ...] = ()  # means over the row's seeds (their spread: seed_sd), tested when retrained


_RATE = (Proportion("rate", "pairs", successes="holds"), Proportion("agreement", "pairs", share="agreement"))
_MEDIANS = ("kappa_rollout", "product_kappa_half", "product_bound")
_WILSON = ("inputs", "pairs", "holds", "rate", "ci_low", "ci_high", "agreement")
_ACROSS_SEEDS = ("seeds", "seed_sd", "ci_low", "ci_high", "seed_low", "seed_high")  # a mean over seeds, its spread
_STUDY_DEPTH = ("layer", "depth", "seeds", "pairs", "holds", "rate", *_ACROSS_SEEDS[1:])
_FAILURES = ("pairs", "failures", "late_failures", "share")
_LATE = (Proportion("rate", "pairs", successes="failures"), Proportion("share", "failures", successes="late_failures"))
TABLES: dict[str, Table] = {
    t.name: t
    for t in (
        Table(
            "model_rates",
            key=("model", "dataset", "token_set"),
            columns=("model", "dataset", "token_set", *_WILSON, "seed"),
            same=("inputs", "pairs", "seed"),
            proportions=_RATE,
            seed="seed",
            draws="model",
        ),
        Table(
            "depth_rates",
            key=("model", "dataset", "token_set", "layer"),
            columns=("model", "dataset", "token_set", "layer", *_WILSON, "depth"),
            same=("inputs", "pairs", "depth"),
            proportions=_RATE,
            draws="model",
        ),
        Table(
            "special_tokens",
            key=("model", "dataset"),
            columns=tuple(SPECIAL_TOKEN_COLUMNS),
            proportions=(Proportion("share", "failing_all", successes="content_holds"),),
        ),
        Table(
            "rollout_summary",
            key=("model", "dataset", "token_set"),
            columns=("model", "dataset", "token_set", "inputs", "n_layers", *_MEDIANS, "tight_half", "tight_bound"),
            same=("inputs", "n_layers"),
            proportions=(
                Proportion("tight_half", "inputs", share="tight_half"),
                Proportion("tight_bound", "inputs", share="tight_bound"),
            ),
            continuous=_MEDIANS,
            spread_group=("dataset", "token_set"),
        ),
        Table(
            "ftt_scores",
            key=("dataset", "seed"),
            columns=("dataset", "seed", "metric", "test", "published", "best_epoch", "epochs", "n_train"),
            same=("metric", "published", "n_train"),
            continuous=("test", "best_epoch", "epochs"),
            spread_group=("dataset",),
            spread_pool=("metric",),
            seed="seed",
        ),
        Table(  # the supervision study's (rollout_equality.studies.supervision.report): seeds summarised per objective
            "supervision_depth",
            key=("objective", "token_set", "layer"),
            columns=("objective", "token_set", *_STUDY_DEPTH),
            same=("depth", "seeds", "pairs"),
            proportions=(Proportion("rate", "pairs", successes="holds"),),
            draws="objective",
            seed_means=("rate",),
        ),
        Table(
            "supervision_heads",
            key=("objective", "token_set", "attention", "layer"),
            columns=("objective", "token_set", "attention", *_STUDY_DEPTH),
            same=("depth", "seeds", "pairs"),
            proportions=(Proportion("rate", "pairs", successes="holds"),),
            draws="objective",
            seed_means=("rate",),
        ),
        Table(
            "supervision_seeds",
            key=("model", "token_set"),
            columns=("model", "objective", "seed", "token_set", *_FAILURES, "ci_low", "ci_high"),
            same=("objective", "seed", "pairs"),
            proportions=_LATE,
            seed="seed",
            draws="model",
        ),
        Table(
            "supervision_late",
            key=("objective", "token_set"),
            columns=("objective", "token_set", "seeds", *_FAILURES, *_ACROSS_SEEDS[1:]),
            same=("seeds", "pairs"),
            proportions=_LATE,
            draws="objective",
            seed_means=("share",),
        ),
        Table(
            "supervision_contrast",
            key=("token_set", "statistic", "layer"),
            columns=(
                "token_set",
                "statistic",
                "layer",
                "depth",
                "objective",
                "minus",
                "difference",
                *_ACROSS_SEEDS,
                "side",
            ),
            same=("depth", "objective", "minus", "seeds"),
            draws="contrast",
            seed_means=("difference",),
        ),
        Table(
            "supervision_scores",
            key=("model",),
            columns=("model", "objective", "seed", "n_train", "n_test", "epochs", "test_accuracy", "knn_accuracy"),
            same=("objective", "seed", "n_train", "n_test", "epochs"),
            continuous=("test_accuracy", "knn_accuracy"),
            spread_group=("objective",),
            seed="seed",
            draws="model",
        ),
        Table(
            "claims",
            key=("claim", "subject"),
            columns=tuple(CLAIM_COLUMNS),
            same=("paper",),
            status="status",
        ),
    )
}
"""The tables compared, by name (their files: ``<name>.csv``)."""
REQUIRED = "model_rates"
"""The table that makes a folder a tables folder."""


@dataclass
class Test:
    """One statistic of a matched row: its p-value (None when no test applies) and how it reads."""

    p: float | None
    text: str
    adjusted: float | None = None


@dataclass
class Row:
    """A row of the comparison: its table, key, class and why."""

    table: str
    key: tuple[str, ...]
    verdict: str = "identical"
    reasons: list[str] = field(default_factory=list)
    tests: list[Test] = field(default_factory=list)
    draw: str = ""  # a trained model's row: SAME_MODEL or RETRAINED (which test applied); "" for any other row

    def line(self) -> str:
        key = "/".join(self.key)
        tests = [
            t.text + (f" (Holm {t.adjusted:.3g})" if t.adjusted is not None and t.p is not None else "")
            for t in self.tests
            if t.text
        ]
        which = {
            SAME_MODEL: " [same checkpoints: tested as the same model]",
            RETRAINED: " [retrained: checkpoints differ, tested against the seeds' spread]",
        }.get(self.draw, "")
        return f"{self.verdict}: {self.table} {key}{which} — " + "; ".join(self.reasons + tests)


@dataclass
class Comparison:
    """Every compared row, the tables left out (with why) and the number of tests Holm's correction spans."""

    a: Path
    b: Path
    rows: list[Row]
    skipped: list[str]
    n_tests: int
    alpha: float

    def counts(self) -> dict[str, int]:
        return {c: sum(r.verdict == c for r in self.rows) for c in CLASSES}

    @property
    def status(self) -> int:
        """0 when every row is identical or within uncertainty; 1 when one is different, measured on other inputs
        or missing (the runs did not measure the same things, so they cannot be said to agree)."""
        counts = self.counts()
        return 1 if counts["different"] or counts["other inputs"] or counts["missing"] else 0

    def report(self) -> str:
        """One line per row that is not identical, the tables not compared, and the summary line."""
        lines = [r.line() for r in self.rows if r.verdict != "identical"]
        lines += [f"not compared: {s}" for s in self.skipped]
        draws = {d: sum(r.draw == d for r in self.rows) for d in (SAME_MODEL, RETRAINED)}
        if any(draws.values()):
            lines.append(
                f"trained models' rows: {draws[SAME_MODEL]} of the same checkpoints in both (tested as the same "
                f"model), {draws[RETRAINED]} of retrained ones (checkpoints differ: tested against the seeds' spread)"
            )
        counts = self.counts()
        lines.append(
            f"{self.a} against {self.b}: {len(self.rows)} rows: "
            + ", ".join(f"{counts[c]} {c}" for c in CLASSES)
            + f" (Holm's correction over {self.n_tests} tests at alpha = {self.alpha:g})"
        )
        return "\n".join(lines)


def holm(pvalues: Sequence[float]) -> np.ndarray:
    """Holm's step-down adjusted p-values, in the order given: the i-th smallest of m p-values times (m − i + 1),
    made non-decreasing in that order and capped at 1. A hypothesis is rejected at family-wise level α when its
    adjusted p-value is ≤ α (Holm 1979: sort the p-values, reject while p_(i) ≤ α / (m − i + 1))."""
    p = np.asarray(pvalues, dtype=float)
    m = len(p)
    if m == 0:
        return p
    order = np.argsort(p, kind="stable")
    stepped = np.maximum.accumulate((m - np.arange(m)) * p[order])
    out = np.empty(m)
    out[order] = np.minimum(stepped, 1.0)
    return out


WHAT = f"a run's {SUITE_TABLES_DIR.format(suite='<suite>')}/, or docs/offline"
"""The folders ``compare`` reads, as its messages name them."""


def read_tables(folder: str | Path) -> dict[str, pd.DataFrame]:
    """The tables of :data:`TABLES` that ``folder`` holds, as raw strings (a cell as the CSV writes it), checked:
    model_rates.csv present, each header the one this version writes, each key unique. Raises :class:`BadTables`."""
    folder = Path(folder)
    if not folder.is_dir():
        raise BadTables(f"{folder} is not a folder (give {WHAT})")
    if not (folder / f"{REQUIRED}.csv").is_file():
        raise BadTables(f"{folder} is not a tables folder: it has no {REQUIRED}.csv (give {WHAT})")
    tables = {}
    for name, spec in TABLES.items():
        path = folder / f"{name}.csv"
        if not path.is_file():
            continue
        try:
            df = pd.read_csv(path, dtype=str, keep_default_na=False)
        except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
            raise BadTables(f"{path} cannot be read as a table: {err}") from err
        if tuple(df.columns) != spec.columns:
            missing = [c for c in spec.columns if c not in df.columns]
            extra = [c for c in df.columns if c not in spec.columns]
            raise BadTables(
                f"{path} has the columns of another version of the tables: "
                + "; ".join(
                    part
                    for part in (
                        f"missing {', '.join(missing)}" if missing else "",
                        f"unexpected {', '.join(extra)}" if extra else "",
                        "in another order" if not missing and not extra else "",
                    )
                    if part
                )
                + " (compare tables written by the same version of rollout_equality)"
            )
        dup = df[df.duplicated(list(spec.key), keep=False)]
        if len(dup):
            raise BadTables(f"{path}: {len(dup)} rows share a key ({', '.join(spec.key)}), e.g. {dup.iloc[0].tolist()}")
        tables[name] = df
    return tables


def read_inputs(folder: str | Path) -> dict[str, str] | None:
    """{data set: its manifest's digest} of a tables folder's ``inputs.csv``, or None where the folder has none.
    Raises :class:`BadTables` for one of another schema or with a data set twice."""
    path = Path(folder) / f"{INPUTS}.csv"
    if not path.is_file():
        return None
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise BadTables(f"{path} cannot be read as a table: {err}") from err
    if list(df.columns) != ["dataset", "sha256"] or df["dataset"].duplicated().any():
        raise BadTables(
            f"{path} is not a table of data sets and their manifests' digests (dataset, sha256), one row each"
        )
    return dict(zip(df["dataset"], df["sha256"]))


def _number(text: str) -> float:
    return float(text) if text != "" else math.nan


def _count(row: pd.Series, prop: Proportion, where: str) -> tuple[int, int]:
    """(successes, total) of a proportion in a row; a share's count is the share times the total, checked to be a
    whole number to the table's 6 decimals."""
    total = int(_number(row[prop.total]))
    if prop.successes:
        return int(_number(row[prop.successes])), total
    share = _number(row[prop.share])
    if math.isnan(share):
        return 0, 0
    k = round(share * total)
    if abs(share * total - k) > total * 5e-7 + 1e-9:
        raise BadTables(f"{where}: {prop.share} {row[prop.share]} of {prop.total} {total} is not a count")
    return k, total


def _proportion_test(prop: Proportion, a: tuple[int, int], b: tuple[int, int]) -> Test:
    (ka, na), (kb, nb) = a, b
    if (ka, na) == (kb, nb):
        return Test(1.0, "")
    if na == 0 or nb == 0:  # nothing to compare (e.g. no pair fails on all tokens in one run)
        return Test(1.0, f"{prop.label} {ka}/{na} against {kb}/{nb}")
    p = float(stats.fisher_exact([[ka, na - ka], [kb, nb - kb]]).pvalue)
    return Test(p, f"{prop.label} {ka}/{na} ({ka / na:.1%}) against {kb}/{nb} ({kb / nb:.1%}): Fisher p = {p:.3g}")


def _seeds(table: Table, df: pd.DataFrame, rates: pd.DataFrame) -> pd.Series:
    """Each row's training seed as text ("" for a run without one)."""
    if table.seed:
        return df[table.seed]
    if "model" not in df.columns:
        return pd.Series("", index=df.index)
    by_run = dict(zip(zip(rates["model"], rates["dataset"]), rates["seed"]))
    return pd.Series([by_run.get((m, d), "") for m, d in zip(df["model"], df["dataset"])], index=df.index)


def seed_spread(table: Table, column: str, frames: Sequence[pd.DataFrame], pool: tuple[str, ...]) -> tuple[float, int]:
    """(pooled standard deviation across seeds, its degrees of freedom) of ``column`` over the seeded rows of
    ``frames`` (each with a ``_seed`` column) whose ``table.spread_pool`` columns equal ``pool``: the sum of squared
    deviations from each group's mean (:attr:`Table.spread_group`, within one frame) over the sum of (seeds − 1).
    (nan, 0) when no group has two seeds."""
    ss, df_ = 0.0, 0
    for frame in frames:
        sel = frame[frame["_seed"] != ""]
        for col, value in zip(table.spread_pool, pool):
            sel = sel[sel[col] == value]
        for _, g in sel.groupby(list(table.spread_group)):
            x = g[column].map(_number).to_numpy()
            x = x[~np.isnan(x)]  # a row without the value (e.g. a test accuracy of a model without a classifier)
            if len(x) >= 2:
                ss += float(((x - x.mean()) ** 2).sum())
                df_ += len(x) - 1
    return (math.sqrt(ss / df_), df_) if df_ else (math.nan, 0)


def _continuous_test(table: Table, column: str, ra: pd.Series, rb: pd.Series, frames) -> Test:
    a, b = _number(ra[column]), _number(rb[column])
    if ra[column] == rb[column]:
        return Test(1.0 if ra["_seed"] else None, "")
    delta = b - a
    if not ra["_seed"]:
        within = abs(delta) <= ROUNDING_ATOL
        return Test(
            None,
            f"{column} {ra[column]} against {rb[column]}: Δ = {delta:.3g} "
            + ("within" if within else "beyond")
            + f" rounding ({ROUNDING_ATOL:g}; a run without seeds)",
        )
    pool = tuple(ra[c] for c in table.spread_pool)
    s, dof = seed_spread(table, column, frames, pool)
    if dof == 0:
        return Test(0.0, f"{column} {ra[column]} against {rb[column]}: no table has two seeds to measure the spread")
    if s == 0:
        return Test(0.0, f"{column} {ra[column]} against {rb[column]}: the seeds agree exactly, these do not")
    t = delta / (s * math.sqrt(2))
    p = float(2 * stats.t.sf(abs(t), dof))
    return Test(
        p,
        f"{column} {ra[column]} against {rb[column]}: Δ = {delta:.3g}, seed spread {s:.3g} "
        f"({dof} df pooled{' over ' + ', '.join(pool) if pool else ''}): t p = {p:.3g}",
    )


def read_checkpoints(folder: str | Path) -> dict[str, tuple[str, str, str]] | None:
    """{model: (objective, seed, SHA-256 of its weights)} of a folder's :data:`CHECKPOINTS` table, or None where the
    folder has none. Raises :class:`BadTables` for one without those columns or with a model's weights twice."""
    path = Path(folder) / f"{CHECKPOINTS}.csv"
    if not path.is_file():
        return None
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise BadTables(f"{path} cannot be read as a table: {err}") from err
    missing = [c for c in ("model", "objective", "seed", "file", "sha256") if c not in df.columns]
    weights = df[df["file"] == WEIGHTS] if not missing else df
    if missing or weights["model"].duplicated().any():
        raise BadTables(
            f"{path} is not a table of checkpoints (model, objective, seed, file, sha256; one {WEIGHTS} a model)"
        )
    return {m: (o, seed, sha) for m, o, seed, sha in weights[["model", "objective", "seed", "sha256"]].to_numpy()}


def _by_seed(checkpoints: dict[str, tuple[str, str, str]]) -> dict[tuple[str, str], str]:
    """{(objective, seed): SHA-256 of the weights}."""
    return {(o, seed): sha for o, seed, sha in checkpoints.values()}


def _draw(
    table: Table, row: pd.Series, a: dict[str, tuple[str, str, str]], b: dict[str, tuple[str, str, str]]
) -> tuple[str, int]:
    """Which test a row gets (:data:`SAME_MODEL`, :data:`RETRAINED`, or "" when it names no trained model whose
    checkpoint both folders list) and how many of its seeds were retrained."""
    if table.draws == "model":
        model = row["model"]
        if model not in a or model not in b:
            return "", 0
        return (SAME_MODEL, 0) if a[model][2] == b[model][2] else (RETRAINED, 1)
    objectives = [row["objective"]] + ([row["minus"]] if table.draws == "contrast" else [])
    sa, sb = _by_seed(a), _by_seed(b)
    seeds = sorted({seed for (o, seed) in [*sa, *sb] if o in objectives})
    if not seeds:
        return "", 0
    retrained = sum(any(sa.get((o, seed)) != sb.get((o, seed)) for o in objectives) for seed in seeds)
    return (RETRAINED, retrained) if retrained else (SAME_MODEL, 0)


def _rate(row: pd.Series, prop: Proportion, where: str) -> float:
    k, n = _count(row, prop, where)
    return k / n if n else math.nan


def _draw_test(label: str, a: float, b: float, spread: float, dof: int, scale: float, what: str) -> Test:
    """A retrained model's value ``a`` against ``b``: Δ over the seeds' standard deviation ``spread`` (``dof`` degrees
    of freedom) times ``scale`` (√2 for one model's value, √(2k)/n for a mean over n seeds of which k were retrained),
    two-sided p from Student's t."""
    delta = b - a
    head = f"{label} {a:.6g} against {b:.6g}: Δ = {delta:.3g}"
    if delta == 0:
        return Test(1.0, "")
    if dof == 0 or not math.isfinite(spread):
        return Test(0.0, f"{head}, retrained, and no two seeds measure the spread")
    if spread == 0:
        return Test(0.0, f"{head}, retrained: the seeds agree exactly, these do not")
    p = float(2 * stats.t.sf(abs(delta / (spread * scale)), dof))
    return Test(p, f"{head}, retrained: against {what} {spread:.3g} ({dof} df): t p = {p:.3g}")


def _retrained_tests(table: Table, ra: pd.Series, rb: pd.Series, retrained: int, frames, where: str) -> list[Test]:
    """The tests of a retrained row: each proportion of a model's row (:attr:`Table.draws` ``model``) against the
    spread of its objective's other seeds at the same key, pooled over both runs (the model's own draw, which is
    what is tested, left out of it); each of :attr:`Table.seed_means` of a row over seeds against its own
    ``seed_sd`` (both runs' pooled)."""
    if table.draws == "model":
        rest = [c for c in table.key if c != "model"]
        tests = []
        for prop in table.proportions:
            ss, dof = 0.0, 0
            for frame in frames:
                group = frame[
                    (frame["_objective"] == ra["_objective"])
                    & (frame["model"] != ra["model"])  # the other seeds: this one's draw is what is tested
                    & (frame[rest] == ra[rest]).all(axis=1)
                ]
                x = np.array([_rate(r, prop, where) for _, r in group.iterrows()])
                x = x[~np.isnan(x)]
                if len(x) >= 2:
                    ss, dof = ss + float(((x - x.mean()) ** 2).sum()), dof + len(x) - 1
            spread = math.sqrt(ss / dof) if dof else math.nan
            tests.append(
                _draw_test(
                    prop.label,
                    _rate(ra, prop, where),
                    _rate(rb, prop, where),
                    spread,
                    dof,
                    math.sqrt(2),
                    f"the spread of the other {ra['_objective']} seeds",
                )
            )
        return tests
    n = int(_number(ra["seeds"]))
    sd = math.sqrt((_number(ra["seed_sd"]) ** 2 + _number(rb["seed_sd"]) ** 2) / 2) if n > 1 else math.nan
    return [
        _draw_test(
            c,
            _number(ra[c]),
            _number(rb[c]),
            sd,
            2 * (n - 1),
            math.sqrt(2 * retrained) / n,
            f"the seeds' spread ({retrained} of {n} retrained)",
        )
        for c in table.seed_means
    ]


def _checkpoints(a: Path, b: Path) -> tuple[dict, dict] | None:
    """Both folders' trained checkpoints (:func:`read_checkpoints`), or None where one has none (then a trained
    model's rows get the tests of any row)."""
    found = read_checkpoints(a), read_checkpoints(b)
    return None if None in found else found


def _tests(table: Table, ra: pd.Series, rb: pd.Series, frames, checkpoints, where_a: str, where_b: str):
    """(which test applied: :data:`SAME_MODEL`, :data:`RETRAINED` or "", the row's tests). A row of a trained model
    whose checkpoints differ is another draw: tested against the seeds' spread (:func:`_retrained_tests`); any other
    row as the same measurement: Fisher's test of its proportions, its continuous values against the seeds' spread or
    rounding. Its continuous values (:attr:`Table.continuous`) are tested the same way in both cases."""
    draw, retrained = _draw(table, ra, *checkpoints) if table.draws and checkpoints else ("", 0)
    continuous = [_continuous_test(table, c, ra, rb, frames) for c in table.continuous]
    if draw == RETRAINED:
        return draw, _retrained_tests(table, ra, rb, retrained, frames, where_a) + continuous
    proportions = [_proportion_test(p, _count(ra, p, where_a), _count(rb, p, where_b)) for p in table.proportions]
    return draw, proportions + continuous


def compare(a: str | Path, b: str | Path, alpha: float = ALPHA) -> Comparison:
    """Compare the tables folders ``a`` and ``b`` row by row (the module's docstring says how). Raises
    :class:`BadTables` for a folder that is not a tables folder or holds tables of another schema."""
    a, b = Path(a), Path(b)
    ta, tb = read_tables(a), read_tables(b)
    checkpoints = _checkpoints(a, b)
    rows: list[Row] = []
    skipped: list[str] = []
    inputs_a, inputs_b = read_inputs(a), read_inputs(b)
    if (inputs_a is None) != (inputs_b is None):
        skipped.append(
            f"{INPUTS}.csv (only in {b if inputs_a is None else a}): whether the rows were measured on the "
            "same inputs is not checked"
        )
    for name, table in TABLES.items():
        if name not in ta or name not in tb:
            if name in ta or name in tb:
                skipped.append(f"{name}.csv (only in {a if name in ta else b})")
            continue
        da, db = ta[name].copy(), tb[name].copy()
        da["_seed"], db["_seed"] = _seeds(table, da, ta[REQUIRED]), _seeds(table, db, tb[REQUIRED])
        if table.draws == "model":  # each trained model's objective: its seeds' rows give the spread
            for frame, known in zip((da, db), checkpoints or ({}, {})):
                frame["_objective"] = frame["model"].map(lambda m, known=known: known.get(m, ("",))[0])
        ia = {tuple(r[k] for k in table.key): r for _, r in da.iterrows()}
        ib = {tuple(r[k] for k in table.key): r for _, r in db.iterrows()}
        for key in [*ia, *(k for k in ib if k not in ia)]:
            row = Row(name, key)
            rows.append(row)
            if key not in ib or key not in ia:
                row.verdict = "missing"
                row.reasons.append(f"only in {a if key in ia else b}")
                continue
            ra, rb = ia[key], ib[key]
            dataset = ra["dataset"] if "dataset" in table.key else None
            if dataset is not None and inputs_a is not None and inputs_b is not None:
                da_sha, db_sha = inputs_a.get(dataset, "?"), inputs_b.get(dataset, "?")
                if da_sha != db_sha:
                    row.verdict = "other inputs"
                    row.reasons.append(
                        f"measured on other inputs: data set {dataset}'s manifest {da_sha[:12]} against {db_sha[:12]}"
                    )
                    continue
            identical = all(ra[c] == rb[c] for c in table.columns)
            row.draw, row.tests = _tests(table, ra, rb, (da, db), checkpoints, f"{a}/{name}.csv", f"{b}/{name}.csv")
            if identical:
                continue
            row.verdict = "within uncertainty"
            changed = [c for c in table.same if ra[c] != rb[c]]
            if changed:
                row.verdict = "different"
                row.reasons.append(
                    "not the same measurement: " + ", ".join(f"{c} {ra[c]!r} against {rb[c]!r}" for c in changed)
                )
            if table.status and ra[table.status] != rb[table.status]:
                row.verdict = "different"
                row.reasons.append(f"{table.status} {ra[table.status]!r} against {rb[table.status]!r}")
            if any(t.p is None and "beyond" in t.text for t in row.tests):
                row.verdict = "different"
            if not row.reasons and not any(t.text for t in row.tests):
                moved = ", ".join(c for c in table.columns if ra[c] != rb[c])
                row.reasons.append(f"only {moved} differ: what they follow from is compared on its own")
    tested = [t for r in rows for t in r.tests if t.p is not None]
    for t, adjusted in zip(tested, holm([t.p for t in tested])):
        t.adjusted = float(adjusted)
    for r in rows:
        if r.verdict == "within uncertainty" and any(t.adjusted is not None and t.adjusted <= alpha for t in r.tests):
            r.verdict = "different"
    return Comparison(a, b, rows, skipped, len(tested), alpha)
