r"""The equality condition per attention head and under head fusions.

The paper tests the condition on each layer's **head-averaged** attention (mean fusion: the records of
:mod:`rollout_equality.condition.records`). This module tests it on every head's own attention, and on the matrices that
the other fusions of attention-rollout tools form from the heads:

* ``mean``: the average over heads, Σ_h A_h / H: the paper's matrix (its rows already sum to 1); its records are
  the head-averaged records and rollout files themselves, not recomputed here;
* ``max``: the entrywise maximum over heads, each row divided by its sum;
* ``min``: the entrywise minimum over heads, each row divided by its sum.

vit-explain's ``head_fusion`` ("mean", "max", "min") forms the same three matrices before its rollout, without
renormalising them; its ``discard_ratio`` and its rollout's normalisation are set beside this module's in
docs/your-model.md. The condition is defined for row-stochastic matrices, so each fused matrix is renormalised to
rows summing to 1 (:func:`fuse`).

Token sets as in the head-averaged analysis: ``all`` (every token) and ``content`` (special tokens removed and each
row renormalised, :func:`rollout_equality.condition.dobrushin.restrict`): per head, on each head's own matrix; per fusion,
on the fused matrix (fusing first and renormalising, then restricting and renormalising, is the same as restricting
first, since a row's scale cancels).

Each (input, layer, head, token set) and (input, layer, fusion, token set) is tested with the same screened kernel
as the averaged analysis, batched over layers and heads in one call per input and token set; the rollout under each
fusion is the product of ½(I + fused_l) (:func:`rollout_equality.condition.dobrushin._rollout_kappa`).
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Executor
from typing import Any, Sequence

import numpy as np
import pyarrow as pa

from rollout_equality.condition.dobrushin import (
    DEFAULT_ATOL,
    DEFAULT_ENGINE,
    DEFAULT_ROW_SUM_ATOL,
    Engine,
    check_stochastic,
    equality_condition,
    restrict,
)
from rollout_equality.condition.records import FUSION_ROLLOUT_SCHEMA, HEAD_SCHEMA, TOKEN_SETS, _token_set, depth_rows
from rollout_equality.config.settings import FUSIONS, HeadSettings

REDUCTIONS = {"mean": np.mean, "max": np.max, "min": np.min}
"""Each fusion's entrywise reduction over the heads; its names are :data:`rollout_equality.config.settings.FUSIONS`
(checked at import)."""
if tuple(REDUCTIONS) != FUSIONS:
    raise ImportError(f"REDUCTIONS names {tuple(REDUCTIONS)}, the schema's fusions {FUSIONS}: make them one")


def fuse(heads: Any, fusion: str, row_sum_atol: float = DEFAULT_ROW_SUM_ATOL) -> np.ndarray:
    """The fused matrix of every head's attention, each row renormalised to sum to 1.

    heads: (..., H, n, n) row-stochastic (each head's attention). fusion: a name of :data:`REDUCTIONS` (a
    :class:`rollout_equality.config.settings.HeadSettings` holds only those; another raises KeyError).
    Returns float64 (..., n, n), row-stochastic. Raises ValueError when a fused row has no mass (``min``: every
    entry of the row is 0 in some head), naming the row.
    """
    A = check_stochastic(heads, row_sum_atol, name="heads")
    if A.ndim < 3:
        raise ValueError(f"heads must have shape (..., H, n, n); got {A.shape}")
    return _fuse_checked(A, fusion)


def _fuse_checked(A: np.ndarray, fusion: str) -> np.ndarray:
    """:func:`fuse` of heads ``A`` (float64 (..., H, n, n)) that :func:`check_stochastic` has already accepted."""
    fused = REDUCTIONS[fusion](A, axis=-3)
    mass = fused.sum(axis=-1, keepdims=True)
    empty = mass[..., 0] <= 0
    if empty.any():
        pos = tuple(int(p) for p in np.argwhere(empty)[0])
        raise ValueError(
            f"the {fusion} fusion of the heads has an all-zero row {pos[-1]}"
            f"{f' of matrix {pos[:-1]}' if len(pos) > 1 else ''}: every entry of that row is 0 in some head, so "
            "it cannot be renormalised to a stochastic row"
        )
    return fused / mass


# ----------------------------------------------------------------------------
# Records
# ----------------------------------------------------------------------------


def _checked(heads: np.ndarray, special: np.ndarray, model: str, input_id: str) -> tuple[np.ndarray, np.ndarray]:
    heads = np.asarray(heads, dtype=np.float64)
    special = np.asarray(special, dtype=bool)
    if heads.ndim != 4 or heads.shape[2] != heads.shape[3]:
        raise ValueError(
            f"{model}/{input_id}: per-head attention must have shape (layers, heads, n, n); got {heads.shape}"
        )
    if special.shape != (heads.shape[2],):
        raise ValueError(
            f"{model}/{input_id}: special-token mask has shape {special.shape}, attention has n = {heads.shape[2]}"
        )
    if special.all():
        raise ValueError(f"{model}/{input_id}: every token is special; there is no content token to analyse")
    return heads, special


def _per_head(heads, special, token_set, atol, row_sum_atol, engine):
    """(condition fields by (layer, head), n) of every head of one input on one token set."""
    A = restrict(heads, ~special, row_sum_atol, engine) if token_set == "content" else heads
    return equality_condition(A, atol=atol, row_sum_atol=row_sum_atol, engine=engine).as_dict(), A.shape[-1]


def _fused(fused, special, token_set, atol, row_sum_atol, engine):
    """(condition fields by layer, κ of the rollout by depth, n) of one fusion of one input on one token set: the
    head-averaged analysis (:func:`rollout_equality.condition.records._token_set`) of the fused layers (L, n, n)."""
    return _token_set(fused, special, token_set, atol, row_sum_atol, engine)


def _condition_rows(fields: dict[str, Any], res: dict[str, np.ndarray], n_heads: int | None = None) -> list[dict]:
    """Rows of the heads file: ``fields`` and each layer's condition fields ``res`` (arrays by layer), or each
    (layer, head)'s with ``n_heads`` (arrays by layer and head; ``head`` null otherwise: a fused matrix)."""
    keys = [key for key in res if key != "n"]
    n_layers = len(res[keys[0]])
    if n_heads is None:
        cells = [((layer,), layer, None) for layer in range(n_layers)]
    else:
        cells = [((layer, head), layer, head) for layer in range(n_layers) for head in range(n_heads)]
    return [
        {**fields, "layer": layer, "head": head, **{key: res[key][at].item() for key in keys}}
        for at, layer, head in cells
    ]


def analyse_head_inputs(
    batch: Sequence[tuple[np.ndarray, np.ndarray]],
    input_ids: Sequence[str],
    *,
    model: str,
    dataset: str,
    settings: HeadSettings,
    seed: int | None = None,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
    pool: Executor | None = None,
    engine: Engine = DEFAULT_ENGINE,
) -> list[tuple[list[dict[str, Any]], list[dict[str, Any]]]]:
    """Per-head and fused records of each input of a batch: (head-file rows, fused rollout rows) per input.

    batch: (heads, special) per input: heads (L, H, n, n) float32 or better, each head's attention of this input's
    own tokens (no padding); special bool (n,). ``settings``: what to measure (per head: ``per_head``; the fusions
    other than mean: ``settings.extra_fusions``). ``pool`` and ``engine`` as
    :func:`rollout_equality.condition.records.analyse_inputs` takes them (one task per input, token set and part; the records
    are the same either way).
    """
    if len(batch) != len(input_ids):
        raise ValueError(f"{len(input_ids)} ids for {len(batch)} inputs")
    checked = [_checked(h, s, model, i) for (h, s), i in zip(batch, input_ids)]
    if pool is not None:
        engine = dataclasses.replace(engine, serial=True)
    parts = (["heads"] if settings.per_head else []) + list(settings.extra_fusions)
    tasks = []
    for heads, special in checked:
        # each fusion formed once per input (both token sets analyse it), from heads validated once
        valid = check_stochastic(heads, row_sum_atol, name="heads") if settings.extra_fusions else heads
        fused = {part: _fuse_checked(valid, part) for part in settings.extra_fusions}
        for ts in TOKEN_SETS:
            for part in parts:
                if part == "heads":
                    tasks.append((_per_head, heads, special, ts, atol, row_sum_atol, engine))
                else:
                    tasks.append((_fused, fused[part], special, ts, atol, row_sum_atol, engine))
    if pool is None:
        done = [fn(*args) for fn, *args in tasks]
    else:
        futures = [pool.submit(fn, *args) for fn, *args in tasks]
        done = [f.result() for f in futures]
    out, k = [], 0
    for (heads, _), input_id in zip(checked, input_ids):
        n_layers, n_heads = heads.shape[:2]
        base = {"model": model, "seed": seed, "dataset": dataset, "input_id": input_id}
        layout = {"n_layers": n_layers, "n_heads": n_heads}
        head_rows: list[dict[str, Any]] = []
        rollout_rows: list[dict[str, Any]] = []
        for token_set in TOKEN_SETS:
            for part in parts:
                result = done[k]
                k += 1
                if part == "heads":
                    res, n = result
                    fields = {**base, **layout, "fusion": None, "token_set": token_set, "n_tokens": n}
                    head_rows += _condition_rows(fields, res, n_heads)
                    continue
                res, kappa_rollout, n = result
                head_rows += _condition_rows(
                    {**base, **layout, "fusion": part, "token_set": token_set, "n_tokens": n}, res
                )
                fields = {**base, "fusion": part, "n_heads": n_heads, "token_set": token_set, "n_tokens": n}
                rollout_rows += depth_rows(fields, res, kappa_rollout)
        out.append((head_rows, rollout_rows))
    return out


def write_head_records(path, rollout_path, head_rows: list[dict], rollout_rows: list[dict], metadata: dict) -> None:
    """Write the heads file to ``path`` and its fused rollout companion to ``rollout_path``, each atomically (the
    rollout first). With the feature off both hold no row (the schema alone), so that a rule's outputs exist."""
    from pathlib import Path

    from rollout_equality.runtime.files import write_parquet

    write_parquet(pa.Table.from_pylist(list(rollout_rows), schema=FUSION_ROLLOUT_SCHEMA), Path(rollout_path), metadata)
    write_parquet(pa.Table.from_pylist(list(head_rows), schema=HEAD_SCHEMA), Path(path), metadata)
