"""ALBERT as a discrete-time dynamical system: one shared layer applied T times.

ALBERT (``num_hidden_groups = inner_group_num = 1``) applies the same layer at every depth, so its
depth is a time axis: :func:`unroll` runs a real input's tokens through the model's own shared layer
module ``steps`` times (24 = twice the trained depth of albert-base), keeping every state and the
attention of every step. The first ``num_hidden_layers`` states are the model's own forward (tested).

Per (input, step) the records hold the mean pairwise distance of the normalised tokens, the mean
and min |corr(x_i, v1)| (cosine with v1, the eigenvector of the layer matrix F = W_O W_V =
Σ_h W_O^h W_V^h chosen by :func:`rollout_equality.studies.dynamics.sphere.principal_eigenpair` with η = 1, the
residual stream's step), and, side by side, κ of the step's head-averaged attention, κ of the
rollout Π ½(I + A_s) up to that step and whether the equality condition holds at that step.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rollout_equality.condition.dobrushin import DEFAULT_ATOL, DEFAULT_ROW_SUM_ATOL, equality_condition
from rollout_equality.studies.dynamics import sphere as dy

log = logging.getLogger(__name__)


class NotSharedLayerError(ValueError):
    """The model is not an ALBERT with one shared layer."""


def load(path: str | os.PathLike, seed: int | None = None):
    """(model, tokenizer) of an ALBERT directory, eager attention, eval mode, float32 on the CPU;
    ``seed``: a ``random_init`` model, its weights drawn from the seed."""
    import transformers

    from rollout_equality.acquire.models import load_transformers_model

    config = transformers.AutoConfig.from_pretrained(path)
    if config.model_type != "albert":
        raise NotSharedLayerError(
            f"{path} holds a {config.model_type!r} model; the dynamics study needs an ALBERT model"
        )
    model = load_transformers_model(path, seed).eval()
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    shared_layer(model)
    return model, tokenizer


def shared_layer(model):
    """The one layer group that ALBERT applies at every depth (raises unless there is exactly one)."""
    cfg = model.config
    if getattr(cfg, "num_hidden_groups", None) != 1 or getattr(cfg, "inner_group_num", None) != 1:
        raise NotSharedLayerError(
            f"the model has num_hidden_groups={getattr(cfg, 'num_hidden_groups', None)}, "
            f"inner_group_num={getattr(cfg, 'inner_group_num', None)}: the dynamics need one shared layer (1 and 1)"
        )
    if getattr(cfg, "_attn_implementation", "eager") != "eager":
        raise ValueError(
            "load the model with attn_implementation='eager': other kernels do not return attention weights"
        )
    return model.encoder.albert_layer_groups[0]


def layer_matrix(model) -> np.ndarray:
    """F = W_O W_V of the shared layer: (D, D), equal to Σ_h W_O^h W_V^h."""
    att = shared_layer(model).albert_layers[0].attention
    return att.dense.weight.detach().double().numpy() @ att.value.weight.detach().double().numpy()


def unroll(model, input_ids, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """Apply the shared layer ``steps`` times to one input (1-D token ids, no padding).

    Returns hidden states (steps + 1, n, D) in float64 (index 0: the embedding projection, the
    layer's first input) and attentions (steps, H, n, n) in float64.
    """
    import torch

    group = shared_layer(model)
    attention = group.albert_layers[0].attention
    captured: list[torch.Tensor] = []
    hook = attention.register_forward_hook(lambda module, args, output: captured.append(output[1].detach()))
    try:
        with torch.no_grad():
            ids = torch.as_tensor(input_ids).reshape(1, -1)
            h = model.encoder.embedding_hidden_mapping_in(model.embeddings(input_ids=ids))
            states = [h[0]]
            for _ in range(steps):
                h = group(h, None)
                states.append(h[0])
    finally:
        hook.remove()
    if len(captured) != steps or any(a is None for a in captured):
        raise RuntimeError("the shared layer's attention returned no weights; is attn_implementation 'eager'?")
    return (torch.stack(states).double().numpy(), torch.cat(captured).double().numpy())


def analyse(
    states: np.ndarray,
    attentions: np.ndarray,
    v1: np.ndarray,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
) -> pd.DataFrame:
    """Per-step rows of one unrolled input (step 0 = the layer's input: no attention there)."""
    A = attentions.mean(axis=1)
    cond = equality_condition(A, atol=atol, row_sum_atol=row_sum_atol)
    table = dy.step_table(states, A, v1, cond.kappa, row_sum_atol)
    table.insert(1, "n_tokens", states.shape[1])
    table["holds"] = pd.array([pd.NA] + [bool(x) for x in np.atleast_1d(cond.holds)], dtype="boolean")
    return table


def measure_albert(
    model_dir: str | os.PathLike,
    texts: list[str],
    ids: list[str],
    steps: int,
    max_tokens: int,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
    show_progress: bool = True,
    seed: int | None = None,
) -> tuple[pd.DataFrame, dict[str, Any]]:
    """Unroll every text through ``steps`` applications of the shared layer (``seed``: a ``random_init``
    model, see :func:`load`).

    Returns the records (one row per input and step) and the layer's eigen-information.
    """
    import torch

    from rollout_equality.runtime.files import progress

    if steps < 1:
        raise ValueError(f"steps must be >= 1, got {steps}")
    model, tokenizer = load(model_dir, seed)
    F = layer_matrix(model)
    principal = dy.principal_eigenpair(F, eta=1.0)
    v1 = principal["vector"]
    if not principal["dominant"]:
        log.warning(
            "the shared layer's λ1 = %.4g is not strictly dominant in |1 + λ| (gap %.3g)",
            principal["value"],
            principal["gap"],
        )
    values = principal["eigenvalues"]
    top = values[np.argsort(-np.abs(1 + values))[:5]]
    info = {
        "lambda1": principal["value"],
        "dominant": principal["dominant"],
        "gap": principal["gap"],
        "leading_eigenvalues": [[float(z.real), float(z.imag)] for z in top],
        "hidden_size": int(F.shape[0]),
        "heads": int(model.config.num_attention_heads),
        "trained_depth": int(model.config.num_hidden_layers),
        "steps": steps,
        "max_tokens": max_tokens,
        "torch": torch.__version__,
    }
    frames = []
    for input_id, text in zip(ids, progress(texts, desc="unroll ALBERT", unit="input", disable=not show_progress)):
        tokens = tokenizer(text, truncation=True, max_length=max_tokens)["input_ids"]
        if len(tokens) < 2:
            raise ValueError(f"input {input_id!r} has {len(tokens)} token(s); the pairwise distance needs two")
        states, attentions = unroll(model, tokens, steps)
        frames.append(analyse(states, attentions, v1, atol, row_sum_atol).assign(input_id=input_id))
    records = pd.concat(frames, ignore_index=True)
    return records[["input_id"] + [c for c in records.columns if c != "input_id"]], info


def summarise(records: pd.DataFrame) -> pd.DataFrame:
    """Per step: means over inputs, the rate at which the condition holds, and input count."""
    grouped = records.groupby("step", sort=True)
    out = grouped[["mean_distance", "mean_abs_corr", "min_abs_corr", "kappa", "kappa_rollout"]].mean()
    out["holds_rate"] = grouped["holds"].apply(lambda s: float(s.dropna().mean()) if s.notna().any() else np.nan)
    out["inputs"] = grouped["input_id"].nunique()
    return out.reset_index()


def unroll_albert(
    model_info: dict,
    data_manifest: str | os.PathLike,
    records_path: str | os.PathLike,
    info_path: str | os.PathLike,
    steps: int,
    max_tokens: int,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
) -> pd.DataFrame:
    """Unroll every input of a prepared text data set; write the records (Parquet, provenance in
    its metadata) and the layer's eigen-information (JSON), each atomically.

    The model's files are checked against what ``prepare_model`` recorded and the inputs against their manifest
    (as rule measure checks them) before anything runs; the provenance names the model's files and hashes, the
    data set's digest and what decides the bits (:func:`rollout_equality.runtime.provenance.provenance`)."""
    import pyarrow as pa
    import torch

    from rollout_equality.acquire.data import load_inputs
    from rollout_equality.acquire.models import check_model, model_record, random_seed
    from rollout_equality.config.paths import MODEL_INFO, snakemake_command
    from rollout_equality.runtime.files import write_json, write_parquet
    from rollout_equality.runtime.provenance import provenance

    name = model_info.get("name")
    check_model(
        model_info,
        f"prepare it again ({snakemake_command(MODEL_INFO.format(model=name), '--forcerun', 'prepare_model')})",
    )
    ids, texts, manifest = load_inputs(Path(data_manifest).parent)
    if manifest["modality"] != "text":
        raise ValueError(f"{data_manifest} holds {manifest['modality']} inputs; ALBERT reads text")

    records, info = measure_albert(
        model_info["path"], texts, ids, steps, max_tokens, atol, row_sum_atol, seed=random_seed(model_info)
    )
    info.update(
        {
            "model": model_record(model_info),
            "dataset": {"name": manifest.get("name"), "n": len(ids), "sha256": manifest.get("sha256")},
            "condition": {"atol": atol, "row_sum_atol": row_sum_atol},
            "compute": provenance("cpu", threads=torch.get_num_threads()),
        }
    )
    write_parquet(pa.Table.from_pandas(records, preserve_index=False), records_path, info)
    write_json(info_path, info)
    first, last = summarise(records).iloc[[0, -1]].to_dict("records")
    log.info(
        "unrolled %d inputs for %d steps: mean pairwise distance %.4f -> %.4f, mean |corr(x, v1)| %.4f -> %.4f",
        len(ids),
        steps,
        first["mean_distance"],
        last["mean_distance"],
        first["mean_abs_corr"],
        last["mean_abs_corr"],
    )
    return records
