"""Tabular benchmarks prepared as in Gorishniy et al. (2021) from a table :mod:`rollout_equality.acquire.tables` fetched.

Preparation (:func:`prepare_tabular`), following the ``recipe`` (config ``tabular.recipe``;
its defaults are the FT-Transformer reference code of Gorishniy et al. (2021),
yandex-research/rtdl-revisiting-models ``lib/data.py``): a seeded train/validation/test
split; numerical features quantile-normalised (scikit-learn's QuantileTransformer with a
normal output, fitted on train only; ``n_quantiles`` ``auto`` = max(min(n_train // 30, 1000),
10); the fit sees train plus tiny Gaussian noise, ``quantile_noise``: ``reference``, std
1e-3 / max(std_j, 1e-3) per column j as in the reference code, ``relative``, std 1e-5 · std_j,
or ``none``); categorical features as integer indices (``categories``: ``train``, fitted on
train with index ``cardinality - 1`` kept for categories unseen in train, as the reference;
or ``all_rows``, codes by first appearance over all rows, no unseen slot); regression
targets standardised with train statistics. Missing values follow ``missing``: ``error``
(default), ``drop_rows``, or ``category`` (a missing categorical value is its own category;
a missing numerical value is still an error).
"""

from __future__ import annotations

import json
import logging
import os
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rollout_equality.acquire.tables import SOURCE_TEST_ROWS
from rollout_equality.config.paths import snakemake_command
from rollout_equality.config.schema import choices
from rollout_equality.runtime import digests
from rollout_equality.runtime.files import atomic_path, write_json

log = logging.getLogger(__name__)

MISSING_CATEGORY = "<missing>"


def split_indices(
    n: int, seed: int, test: float | str, val: float, source_test: np.ndarray | None = None
) -> dict[str, np.ndarray]:
    """A seeded split of ``n`` rows into train, val and test (sorted row indices), as Gorishniy et al. split
    their tables: the test rows first, then ``val`` of the other rows for validation, the rest train
    (test 0.2, val 0.2: 64/16/20).

    ``test``: a fraction of all rows (drawn at random), or ``"source"``: the rows flagged in
    ``source_test`` (bool (n,), the source's own test file; UCI Adult's adult.test). ``val`` rounds up,
    as scikit-learn's ``train_test_split`` (the reference's 6,513 of adult.data's 32,561 rows).
    """
    rng = np.random.default_rng(seed)
    if test == "source":
        if source_test is None or not source_test.any():
            raise ValueError(
                "split test: source needs a source with its own test rows (a csv source with `test_path`); "
                "give a fraction instead"
            )
        test_idx, rest = np.flatnonzero(source_test), rng.permutation(np.flatnonzero(~source_test))
    else:
        perm = rng.permutation(n)
        n_test = int(round(test * n))
        test_idx, rest = perm[:n_test], perm[n_test:]
    n_val = int(np.ceil(val * len(rest)))
    parts = {"test": test_idx, "val": rest[:n_val], "train": rest[n_val:]}
    for part, idx in parts.items():
        if len(idx) == 0:
            raise ValueError(
                f"the {part} split is empty ({n} rows, test={test}, val={val}); use a larger table or other fractions"
            )
    return {k: np.sort(v) for k, v in parts.items()}


def _feature_columns(name: str, X: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(numerical, categorical) columns: categorical are category, bool and string columns."""
    cat_cols = [
        c
        for c in X.columns
        if isinstance(X[c].dtype, pd.CategoricalDtype)
        or pd.api.types.is_bool_dtype(X[c])
        or pd.api.types.is_string_dtype(X[c])
        or X[c].dtype == object
    ]
    cont_cols = [c for c in X.columns if c not in cat_cols]
    bad = [c for c in cont_cols if not pd.api.types.is_numeric_dtype(X[c])]
    if bad:
        raise ValueError(f"tabular data set {name!r}: columns {bad} are neither numerical nor categorical")
    return cont_cols, cat_cols


def _handle_missing(
    name: str,
    X: pd.DataFrame,
    y: pd.Series,
    target: str,
    missing: str,
    cont_cols: list[str],
    cat_cols: list[str],
    source_test: np.ndarray,
) -> tuple[pd.DataFrame, pd.Series, np.ndarray]:
    """Apply the ``missing`` policy (error, drop_rows, category); the target may have no missing value.
    ``source_test`` (bool per row) follows the rows that are kept."""
    if y.isna().any():
        raise ValueError(f"tabular data set {name!r}: the target {target!r} has {int(y.isna().sum())} missing values")
    nan_cont = {c: int(X[c].isna().sum()) for c in cont_cols if X[c].isna().any()}
    nan_cat = {c: int(X[c].isna().sum()) for c in cat_cols if X[c].isna().any()}
    if missing == "drop_rows":
        keep = ~X.isna().any(axis=1)
        X, y, source_test = X[keep], y[keep], source_test[keep.to_numpy()]
        log.info("%s: dropped %d rows with missing values", name, int((~keep).sum()))
    elif nan_cont or (nan_cat and missing != "category"):
        raise ValueError(
            f"tabular data set {name!r}: missing values in {nan_cont or nan_cat} (column: count); set "
            "`missing: drop_rows` (or `missing: category` for categorical columns) in its config entry"
        )
    return X.reset_index(drop=True), y.reset_index(drop=True), source_test


def _numerical(
    cont: np.ndarray, parts: dict[str, np.ndarray], seed: int, n_quantiles: int | str, noise: str
) -> dict[str, np.ndarray]:
    """Quantile-normalised numerical features (``x_cont_<part>``), fitted on train (plus noise, see the module)."""
    from sklearn.preprocessing import QuantileTransformer

    train = cont[parts["train"]]
    std = train.std(axis=0, keepdims=True)
    rng = np.random.default_rng(seed)
    if noise == "reference":  # rtdl-revisiting-models lib/data.py: noise = 1e-3
        fit = train + (1e-3 / np.maximum(std, 1e-3)) * rng.standard_normal(train.shape)
    elif noise == "relative":
        fit = train + rng.normal(0.0, 1e-5, train.shape) * std
    elif noise == "none":
        fit = train
    else:
        raise ValueError(f"quantile_noise must be one of {choices('$defs', 'quantile_noise')}; got {noise!r}")
    qt = QuantileTransformer(
        output_distribution="normal",
        n_quantiles=max(min(len(train) // 30, 1000), 10) if n_quantiles == "auto" else min(n_quantiles, len(train)),
        subsample=10**9,
        random_state=seed,
    ).fit(fit)
    return {f"x_cont_{part}": qt.transform(cont[idx]).astype(np.float32) for part, idx in parts.items()}


def _categorical(
    cat: np.ndarray, parts: dict[str, np.ndarray], categories: str
) -> tuple[dict[str, np.ndarray], list[int]]:
    """Categorical features as indices (``x_cat_<part>``) and the cardinalities.

    ``train``: fitted on train, the last index of each column for values unseen in train;
    ``all_rows``: codes by first appearance over all rows (every part), no unseen slot.
    """
    if categories == "all_rows":
        codes, cardinalities = np.empty(cat.shape, dtype=np.int64), []
        for j in range(cat.shape[1]):
            codes[:, j], uniques = pd.factorize(cat[:, j])
            cardinalities.append(len(uniques))
        return {f"x_cat_{part}": codes[idx] for part, idx in parts.items()}, cardinalities
    if categories != "train":
        raise ValueError(f"categories must be one of {choices('$defs', 'categories')}; got {categories!r}")
    from sklearn.preprocessing import OrdinalEncoder

    enc = OrdinalEncoder(handle_unknown="use_encoded_value", unknown_value=-1).fit(cat[parts["train"]])
    cardinalities = [len(c) + 1 for c in enc.categories_]
    arrays = {}
    for part, idx in parts.items():
        codes = enc.transform(cat[idx]).astype(np.int64)
        for j, card in enumerate(cardinalities):
            codes[codes[:, j] < 0, j] = card - 1
        arrays[f"x_cat_{part}"] = codes
    return arrays, cardinalities


def _targets(name: str, y: pd.Series, task: str, parts: dict[str, np.ndarray]) -> tuple[dict[str, np.ndarray], dict]:
    """Targets (``y_<part>``): standardised with train statistics (regression) or class indices; and their info."""
    if task == "regression":
        values = y.to_numpy(dtype=np.float64)
        mean, std = float(values[parts["train"]].mean()), float(values[parts["train"]].std())
        return {f"y_{part}": ((values[idx] - mean) / std).astype(np.float32) for part, idx in parts.items()}, {
            "mean": mean,
            "std": std,
        }
    labels = y.astype(str).str.strip().str.rstrip(".")
    classes = sorted(labels.iloc[parts["train"]].unique())
    if task == "binclass" and len(classes) != 2:
        raise ValueError(f"tabular data set {name!r}: binclass needs 2 classes in train; got {classes}")
    unseen = sorted(set(labels) - set(classes))
    if unseen:
        raise ValueError(f"tabular data set {name!r}: labels {unseen} occur outside train only")
    lookup = {c: i for i, c in enumerate(classes)}
    return {f"y_{part}": labels.iloc[idx].map(lookup).to_numpy(dtype=np.int64) for part, idx in parts.items()}, {
        "classes": classes
    }


def prepare_tabular(
    name: str,
    spec: dict[str, Any],
    raw: pd.DataFrame,
    target: str,
    data_path: str | os.PathLike,
    manifest_path: str | os.PathLike,
    *,
    seed: int,
    test: float | str,
    val: float,
    recipe: dict[str, Any],
) -> dict[str, Any]:
    """Split and preprocess a raw table; write the arrays to ``data_path`` (npz) and ``manifest_path`` (JSON, last).

    ``recipe``: ``quantile_noise``, ``n_quantiles``, ``categories`` (see the module docstring); ``raw.attrs``
    may say how many last rows are the source's own test rows (``split`` ``test: source``).
    """
    task, missing = spec["task"], spec["missing"]
    if task not in (
        tasks := choices(
            "properties", "tabular", "properties", "datasets", "additionalProperties", "properties", "task"
        )
    ):
        raise ValueError(f"tabular data set {name!r}: task must be one of {tasks}; got {task!r}")
    if target not in raw.columns:
        raise ValueError(
            f"tabular data set {name!r}: target column {target!r} not found; columns are {list(raw.columns)}"
        )
    X, y = raw.drop(columns=[target]), raw[target]
    cont_cols, cat_cols = _feature_columns(name, X)
    source_test = np.zeros(len(raw), dtype=bool)
    n_source_test = int(raw.attrs.get(SOURCE_TEST_ROWS, 0))
    if n_source_test:
        source_test[-n_source_test:] = True
    X, y, source_test = _handle_missing(name, X, y, target, missing, cont_cols, cat_cols, source_test)
    parts = split_indices(len(X), seed, test, val, source_test)

    arrays: dict[str, np.ndarray] = {}
    if cont_cols:
        arrays |= _numerical(
            X[cont_cols].to_numpy(dtype=np.float64), parts, seed, recipe["n_quantiles"], recipe["quantile_noise"]
        )
    cardinalities: list[int] = []
    if cat_cols:
        cat = X[cat_cols].astype("object").where(X[cat_cols].notna(), MISSING_CATEGORY).astype(str).to_numpy()
        cat_arrays, cardinalities = _categorical(cat, parts, recipe["categories"])
        arrays |= cat_arrays
    y_arrays, target_info = _targets(name, y, task, parts)
    arrays |= y_arrays

    with atomic_path(data_path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez(fh, **arrays)
    manifest = {
        "name": name,
        "task": task,
        "source": spec["source"],
        "seed": seed,
        "split": {"test": test, "val": val},
        "recipe": {k: recipe[k] for k in ("quantile_noise", "n_quantiles", "categories")},
        "n": {part: int(len(idx)) for part, idx in parts.items()},
        "cont_features": cont_cols,
        "cat_features": cat_cols,
        "cat_cardinalities": cardinalities,
        "target": target,
        "target_info": target_info,
        "missing": missing,
        "sha256": {k: digests.of_bytes(np.ascontiguousarray(v).tobytes()) for k, v in sorted(arrays.items())},
    }
    write_json(manifest_path, manifest, default=str)
    return manifest


def load_prepared(
    data_path: str | os.PathLike, manifest_path: str | os.PathLike
) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    """(manifest, arrays) of a prepared table (:func:`prepare_tabular`), every array checked against the SHA-256 its
    manifest records: a missing, unreadable or edited ``data.npz`` (or an array it lacks or adds) raises
    :class:`ModifiedTableError` naming the file and the rule to rerun, before anything is trained or measured, so
    that records never cite a manifest whose arrays they did not read."""
    data_path, manifest_path = Path(data_path), Path(manifest_path)
    if not manifest_path.exists():
        raise FileNotFoundError(f"{manifest_path} is missing: prepare the table first (rule prepare_tabular)")
    manifest = json.loads(manifest_path.read_text())
    rerun = (
        f"prepare the table again ({snakemake_command(str(manifest_path), '--forcerun', 'prepare_tabular')}, "
        f"or delete {data_path})"
    )
    try:
        with np.load(data_path) as npz:
            arrays = {k: npz[k] for k in npz.files}
    except (OSError, ValueError, zipfile.BadZipFile) as err:  # missing, truncated, or a member's CRC fails
        raise ModifiedTableError(f"{data_path} cannot be read as the prepared arrays ({err}); {rerun}") from err
    recorded = manifest.get("sha256")
    if not isinstance(recorded, dict):
        raise ModifiedTableError(f"{manifest_path} records no hashes of its arrays; {rerun}")
    if set(arrays) != set(recorded):
        raise ModifiedTableError(
            f"{data_path} holds the arrays {sorted(arrays)}, its manifest {manifest_path} records {sorted(recorded)}; "
            f"{rerun}"
        )
    for key, array in sorted(arrays.items()):
        if digests.of_bytes(np.ascontiguousarray(array).tobytes()) != recorded[key]:
            raise ModifiedTableError(
                f"{data_path}: array {key!r} is not the one prepared (its SHA-256 differs from {manifest_path}'s); "
                f"{rerun}"
            )
    return manifest, arrays


class ModifiedTableError(RuntimeError):
    """A prepared table's arrays are not what its manifest records (missing, unreadable or other bytes)."""
