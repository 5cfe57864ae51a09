"""Records: the contract between measurement and reporting.

One Parquet file per (model, dataset) with one row per (input, layer, token set),
and a companion rollout file (the workflow names it ``*.rollout.parquet``) with one row per
(input, token set, depth).
Tables and figures read only these files.

Layer records (:data:`LAYER_SCHEMA`)
    model, dataset, input_id, layer (0-based), n_layers, token_set ("content":
    special tokens removed and rows renormalised; "all": every token of the
    input), n_tokens, and every field of
    :class:`rollout_equality.dobrushin.ConditionResult`: holds, holds_direct,
    kappa, kappa_half, bound, slack, n_max_pairs, witness_i, witness_j (-1: none;
    indices into that token set's matrix).

Rollout records (:data:`ROLLOUT_SCHEMA`)
    model, dataset, input_id, token_set, n_tokens, depth (rollout through
    layers 0..depth), n_layers, kappa_rollout (κ of Π ½(I + A_l)),
    product_kappa_half (Π κ(½(I + A_l))), product_bound (Π ½(1 + κ(A_l))).

File metadata (key ``rollout_equality``) holds the run's provenance as JSON:
model source and revision, data manifest hash, tolerances, device, versions.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rollout_equality.dobrushin import DEFAULT_ATOL, DEFAULT_ROW_SUM_ATOL, equality_condition, restrict, rollout_kappa
from rollout_equality.io import write_parquet

TOKEN_SETS = ("content", "all")

LAYER_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("dataset", pa.string()),
        ("input_id", pa.string()),
        ("layer", pa.int16()),
        ("n_layers", pa.int16()),
        ("token_set", pa.string()),
        ("n_tokens", pa.int32()),
        ("holds", pa.bool_()),
        ("holds_direct", pa.bool_()),
        ("kappa", pa.float64()),
        ("kappa_half", pa.float64()),
        ("bound", pa.float64()),
        ("slack", pa.float64()),
        ("n_max_pairs", pa.int64()),
        ("witness_i", pa.int32()),
        ("witness_j", pa.int32()),
    ]
)

ROLLOUT_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("dataset", pa.string()),
        ("input_id", pa.string()),
        ("token_set", pa.string()),
        ("n_tokens", pa.int32()),
        ("depth", pa.int16()),
        ("n_layers", pa.int16()),
        ("kappa_rollout", pa.float64()),
        ("product_kappa_half", pa.float64()),
        ("product_bound", pa.float64()),
    ]
)


def analyse_input(
    layers: np.ndarray,
    special: np.ndarray,
    *,
    model: str,
    dataset: str,
    input_id: str,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Condition and rollout records of one input.

    layers: (L, n, n) head-averaged attention of this input's own tokens (no padding).
    special: bool (n,), True for special tokens (CLS, registers, separators, ...).
    Returns (layer rows, rollout rows) for both token sets.
    """
    layers = np.asarray(layers, dtype=np.float64)
    special = np.asarray(special, dtype=bool)
    if layers.ndim != 3 or layers.shape[1] != layers.shape[2]:
        raise ValueError(f"{model}/{input_id}: attention must have shape (layers, n, n); got {layers.shape}")
    if special.shape != (layers.shape[1],):
        raise ValueError(
            f"{model}/{input_id}: special-token mask has shape {special.shape}, attention has n = {layers.shape[1]}"
        )
    if special.all():
        raise ValueError(f"{model}/{input_id}: every token is special; there is no content token to analyse")
    n_layers = layers.shape[0]
    layer_rows, rollout_rows = [], []
    for token_set in TOKEN_SETS:
        A = restrict(layers, ~special, row_sum_atol) if token_set == "content" else layers
        n = A.shape[-1]
        res = equality_condition(A, atol=atol, row_sum_atol=row_sum_atol).as_dict()
        for layer in range(n_layers):
            row = {
                "model": model,
                "dataset": dataset,
                "input_id": input_id,
                "layer": layer,
                "n_layers": n_layers,
                "token_set": token_set,
                "n_tokens": n,
            }
            row.update({k: v[layer].item() for k, v in res.items() if k != "n"})
            layer_rows.append(row)
        # the products reuse the layers' κ(A) and κ(½(I+A)) computed above (rollout() recomputes them)
        kappa_rollout = rollout_kappa(A, row_sum_atol)
        product_kappa_half = np.cumprod(res["kappa_half"])
        product_bound = np.cumprod(res["bound"])
        for depth in range(n_layers):
            rollout_rows.append(
                {
                    "model": model,
                    "dataset": dataset,
                    "input_id": input_id,
                    "token_set": token_set,
                    "n_tokens": n,
                    "depth": depth,
                    "n_layers": n_layers,
                    "kappa_rollout": float(kappa_rollout[depth]),
                    "product_kappa_half": float(product_kappa_half[depth]),
                    "product_bound": float(product_bound[depth]),
                }
            )
    return layer_rows, rollout_rows


def _write(rows: Iterable[dict], schema: pa.Schema, path: Path, metadata: dict) -> None:
    write_parquet(pa.Table.from_pylist(list(rows), schema=schema), path, metadata)


def write_records(
    path: str | os.PathLike,
    rollout_path: str | os.PathLike,
    layer_rows: list[dict],
    rollout_rows: list[dict],
    metadata: dict,
) -> None:
    """Write layer records to ``path`` and rollout records to ``rollout_path``, each atomically.

    The rollout file is written first, so an existing layer file always has its companion.
    """
    if not layer_rows:
        raise ValueError(f"no records to write to {path}: the data set gave no input")
    _write(rollout_rows, ROLLOUT_SCHEMA, Path(rollout_path), metadata)
    _write(layer_rows, LAYER_SCHEMA, Path(path), metadata)


def read_records(path: str | os.PathLike):
    """Read a records file (layer or rollout records) as a DataFrame."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"records file {path} is missing: run the measure step for this model and data set")
    return pq.read_table(path).to_pandas()


def read_metadata(path: str | os.PathLike) -> dict:
    """The provenance stored in a records file."""
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"rollout_equality", b"{}"))
