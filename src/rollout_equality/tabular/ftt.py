"""FT-Transformer (rtdl_revisiting_models): reproducible training and square attention in every block.

The last block
--------------
The package's FT-Transformer computes its last block's attention for the [CLS]
query only (a 1 × n matrix): only the [CLS] token's output feeds the head. The
condition needs an n × n matrix in every layer. :func:`block_attention` therefore
recomputes each block's full softmax(Q Kᵀ / √d) from the block's own query and
key projections applied to the block's (normalised) input; for the last block
this is the attention every token would receive if it were a query, and its
[CLS] row is what the model uses. Every call checks the recomputation against
the probabilities the model itself computed (the input of each block's attention
dropout): whole matrices for the first blocks, the [CLS] row for the last; a
difference above 1e-5 raises. Training is untouched (the package's default).
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from rollout_equality.condition.analysis import Attention  # and with it numba: training's provenance names its target
from rollout_equality.config.schema import choices
from rollout_equality.config.settings import OFF, Condition, HeadSettings
from rollout_equality.runtime import digests
from rollout_equality.runtime.device import deterministic_cuda
from rollout_equality.runtime.files import atomic_path, progress, write_text
from rollout_equality.runtime.provenance import provenance
from rollout_equality.tabular.adamw import for_code_path
from rollout_equality.tabular.prepare import load_prepared

log = logging.getLogger(__name__)

PUBLISHED_HIGHER_IS_BETTER = {"accuracy": True, "rmse": False}
"""A binary task's head: one logit with binary cross-entropy (the reference code, ``bin/ft_transformer.py``),
or two logits with cross-entropy."""


def _d_out(manifest: dict[str, Any], binary_head: str | None) -> int:
    task = manifest["task"]
    if task == "regression":
        return 1
    if task == "binclass":
        if binary_head not in (heads := choices("$defs", "binary_head")):
            raise ValueError(f"binary_head must be one of {heads}; got {binary_head!r}")
        return 1 if binary_head == "one_logit" else 2
    return len(manifest["target_info"]["classes"])


def build_model(manifest: dict[str, Any], binary_head: str | None) -> torch.nn.Module:
    """The default FT-Transformer (3 blocks, d_block 192, 8 heads) for a prepared table; ``binary_head`` sets
    the output width of a binary task (the recipe's ``binary_head``; None for another task)."""
    from rtdl_revisiting_models import FTTransformer

    d_out = _d_out(manifest, binary_head)
    return FTTransformer(
        n_cont_features=len(manifest["cont_features"]),
        cat_cardinalities=list(manifest["cat_cardinalities"]),
        d_out=d_out,
        **FTTransformer.get_default_kwargs(),
    )


def model_inputs(arrays: dict[str, np.ndarray], part: str, idx: np.ndarray | slice, device: str):
    """(x_cont, x_cat) of rows ``idx`` of split ``part`` of a prepared table's arrays, as tensors on ``device`` (None
    for a kind of feature the table lacks): what the model takes."""
    x_cont = arrays.get(f"x_cont_{part}")
    x_cat = arrays.get(f"x_cat_{part}")
    return (
        None if x_cont is None else torch.as_tensor(x_cont[idx], device=device),
        None if x_cat is None else torch.as_tensor(x_cat[idx], device=device),
    )


def task_loss(task: str, out: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """The training loss of ``task``: mean squared error, binary cross-entropy on one logit, else cross-entropy."""
    if task == "regression":
        return F.mse_loss(out.squeeze(-1), y.float())
    if task == "binclass" and out.shape[-1] == 1:
        return F.binary_cross_entropy_with_logits(out.squeeze(-1), y.float())
    return F.cross_entropy(out, y)


@torch.inference_mode()
def predict(model, arrays, part: str, device: str, batch_size: int = 4096) -> np.ndarray:
    model.eval()
    n = len(arrays[f"y_{part}"])
    outs = [
        model(*model_inputs(arrays, part, slice(s, s + batch_size), device)).float().cpu()
        for s in range(0, n, batch_size)
    ]
    return torch.cat(outs).numpy()


def score(manifest: dict[str, Any], pred: np.ndarray, y: np.ndarray) -> tuple[str, float]:
    """(metric, value): RMSE in the target's original units for regression, else accuracy."""
    task = manifest["task"]
    if task == "regression":
        std = manifest["target_info"]["std"]
        return "rmse", float(np.sqrt(np.mean((pred.squeeze(-1) - y) ** 2)) * std)
    labels = (pred.squeeze(-1) > 0).astype(np.int64) if pred.shape[-1] == 1 else pred.argmax(-1)
    return "accuracy", float(np.mean(labels == y))


def make_optimizer(model: torch.nn.Module, code_path: str, device: str) -> torch.optim.Optimizer:
    """The recipe's optimiser (rtdl's default AdamW and its parameter groups) as ``code_path`` runs it on ``device``
    (:func:`rollout_equality.tabular.adamw.for_code_path`: the groups in the model's order; on the compatible code
    path on the CPU, the update in IEEE basic operations, whose bits do not depend on the processor)."""
    return for_code_path(model.make_default_optimizer(), model, code_path, device)


def weights_sha256(model: torch.nn.Module) -> str:
    """The SHA-256 (hex) of ``model``'s parameters: each one's float32 bytes on the CPU, in ``named_parameters()``
    order. A training records it after every epoch, so that two machines' trainings can be compared epoch by epoch."""
    return digests.of_buffers(p.detach().cpu().contiguous().numpy() for _, p in model.named_parameters())


def train_ftt(
    data_path: str | os.PathLike,
    manifest_path: str | os.PathLike,
    model_path: str | os.PathLike,
    metrics_path: str | os.PathLike,
    *,
    seed: int,
    max_epochs: int,
    patience: int,
    batch_size: int,
    binary_head: str,
    device: str,
    code_path: str,
    published: dict | None = None,
) -> dict[str, Any]:
    """Train on a prepared table with the default optimiser and early stopping on validation; write the best
    state to ``model_path`` and the scores and history (each epoch's loss, validation score and the SHA-256 of the
    weights after it: :func:`weights_sha256`) to ``metrics_path``. ``code_path`` is the one this process
    runs (:func:`rollout_equality.runtime.code_paths.code_path`): it chooses the optimiser (:func:`make_optimizer`).

    Early stopping as the reference code's ``ProgressTracker(patience)``: training stops once more than
    ``patience`` epochs have passed without a strictly better validation score (or after ``max_epochs``).
    """
    manifest, arrays = load_prepared(data_path, manifest_path)
    if device.startswith("cuda"):
        deterministic_cuda()
    torch.manual_seed(seed)
    model = build_model(manifest, binary_head).to(device)
    optimizer = make_optimizer(model, code_path, device)
    task = manifest["task"]
    n_train = len(arrays["y_train"])
    y_train = torch.as_tensor(arrays["y_train"], device=device)
    generator = torch.Generator().manual_seed(seed)
    best: dict[str, Any] = {"val": -math.inf}
    history, epoch_times = [], []
    bar = progress(range(max_epochs), desc=f"train {manifest['name']} seed {seed}", unit="epoch")
    for epoch in bar:
        start = time.perf_counter()
        model.train()
        for idx in torch.randperm(n_train, generator=generator).split(batch_size):
            optimizer.zero_grad()
            loss = task_loss(task, model(*model_inputs(arrays, "train", idx.numpy(), device)), y_train[idx.to(device)])
            loss.backward()
            optimizer.step()
        epoch_times.append(time.perf_counter() - start)
        metric, val = score(manifest, predict(model, arrays, "val", device), arrays["y_val"])
        signed = val if PUBLISHED_HIGHER_IS_BETTER[metric] else -val
        history.append({"epoch": epoch, "loss": loss.item(), f"val_{metric}": val, "weights": weights_sha256(model)})
        if signed > best["val"]:
            best = {
                "val": signed,
                "epoch": epoch,
                "state": {k: v.detach().cpu().clone() for k, v in model.state_dict().items()},
            }
        elif epoch - best["epoch"] > patience:
            log.info("early stop at epoch %d (best %d)", epoch, best["epoch"])
            break
    model.load_state_dict(best["state"])
    metric, test = score(manifest, predict(model, arrays, "test", device), arrays["y_test"])
    _, val = score(manifest, predict(model, arrays, "val", device), arrays["y_val"])
    metrics = {
        "dataset": manifest["name"],
        "seed": seed,
        "task": task,
        "binary_head": binary_head if task == "binclass" else None,
        "patience": patience,
        "max_epochs": max_epochs,
        "metric": metric,
        "val": val,
        "test": test,
        "best_epoch": best["epoch"],
        "epochs": len(history),
        "seconds_per_epoch": float(np.mean(epoch_times)),
        "seconds_total": float(np.sum(epoch_times)),
        "n_train": n_train,
        "device": device,
        "optimizer": type(optimizer).__name__,
        "compute": provenance(device, threads=torch.get_num_threads()),
        "published": published,
        "history": history,
    }
    with atomic_path(model_path) as tmp, open(tmp, "wb") as fh:
        torch.save(best["state"], fh)  # to a file object: the archive's folder is torch's fixed name, not the file's
    write_text(metrics_path, json.dumps(metrics, indent=2) + "\n")
    log.info(
        "%s seed %d: test %s %.4f after %d epochs (%.2f s/epoch)",
        manifest["name"],
        seed,
        metric,
        test,
        len(history),
        metrics["seconds_per_epoch"],
    )
    return metrics


def load_trained(data_path, manifest_path, model_path, metrics_path, device: str = "cpu"):
    """(manifest, arrays, model in eval mode on ``device``) of a trained FT-Transformer (its head read from
    the run's metrics)."""
    manifest, arrays = load_prepared(data_path, manifest_path)
    metrics = json.loads(Path(metrics_path).read_text())
    model = build_model(manifest, metrics["binary_head"])
    model.load_state_dict(torch.load(model_path, map_location="cpu"))
    return manifest, arrays, model.to(device).eval()


@torch.inference_mode()
def block_attention(model, x_cont, x_cat, check_atol: float = 1e-5, heads: bool = False):
    """Head-averaged attention of every block as (B, L, n, n), n = 1 + features ([CLS] first); with ``heads``, the
    pair (averaged, every head's (B, L, H, n, n)), the average the same bit for bit.

    See the module docstring for the last block. Raises RuntimeError if the
    recomputed probabilities differ from the model's own.
    """
    blocks = model.backbone.blocks
    inputs: dict[int, torch.Tensor] = {}
    own: dict[int, torch.Tensor] = {}
    handles = []
    for i, block in enumerate(blocks):
        attn = block["attention"]
        if attn.key_compression is not None:
            raise ValueError("attention with key compression (Linformer) is not square; not supported")
        handles.append(attn.register_forward_pre_hook(lambda mod, args, i=i: inputs.__setitem__(i, args[1])))
        if attn.dropout is not None:
            handles.append(attn.dropout.register_forward_pre_hook(lambda mod, args, i=i: own.__setitem__(i, args[0])))
    try:
        model.eval()
        model(x_cont, x_cat)
    finally:
        for h in handles:
            h.remove()
    layers, per_head = [], []
    for i, block in enumerate(blocks):
        attn = block["attention"]
        x = inputs[i]
        q, k = attn._reshape(attn.W_q(x)), attn._reshape(attn.W_k(x))
        probs = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(k.shape[-1]), dim=-1)  # (B·H, n, n)
        if i in own:
            reference = own[i]
            mine = probs[:, : reference.shape[1]]  # the last block: its [CLS] row
            err = (mine - reference).abs().max().item()
            if err > check_atol:
                raise RuntimeError(f"block {i}: recomputed attention differs from the model's by {err:.2e}")
        B = x.shape[0]
        every = probs.reshape(B, attn._n_heads, *probs.shape[1:]).float()
        layers.append(every.mean(dim=1))
        per_head.append(every)
    avg = torch.stack(layers, dim=1)
    return (avg, torch.stack(per_head, dim=1)) if heads else avg


MEASURE_ROWS = 256
"""Test rows per forward pass of :func:`measure_ftt` (memory; each row is analysed alone)."""


def measure_ftt(
    data_path,
    manifest_path,
    model_path,
    metrics_path,
    out_path,
    rollout_path,
    *,
    n_inputs: int,
    device: str,
    threads: int,
    condition: Condition,
    heads: HeadSettings = OFF,
    heads_path=None,
    heads_rollout_path=None,
) -> dict[str, float]:
    """Records of a trained FT-Transformer on the first ``n_inputs`` test rows (layer records to ``out_path``,
    rollout records to ``rollout_path``; :data:`MEASURE_ROWS` rows per forward pass on ``threads`` torch threads),
    with the training seed of ``metrics_path`` in their ``seed`` column and ``ftt_seed<seed>`` as their model name (a
    label: readers take the seed from the column); the per-head and fused records ``heads`` asks for to ``heads_path``
    and ``heads_rollout_path`` (every block's heads recomputed as the averaged attention is). Returns the rates."""
    from rollout_equality.measure import Outputs, Reading, measure_and_write

    manifest, arrays, model = load_trained(data_path, manifest_path, model_path, metrics_path, device)
    metrics = json.loads(Path(metrics_path).read_text())
    model_name = f"ftt_seed{metrics['seed']}"
    n = min(n_inputs, len(arrays["y_test"]))
    n_tokens = 1 + len(manifest["cont_features"]) + len(manifest["cat_features"])
    special = np.zeros(n_tokens, dtype=bool)
    special[0] = True  # [CLS]; then continuous, then categorical feature tokens

    def extractor(rows: list[int], heads: bool = False) -> list[Attention]:
        x = model_inputs(arrays, "test", np.asarray(rows), device)
        if not heads:
            return [Attention(layers, special) for layers in block_attention(model, *x).cpu().numpy()]
        att, every = (t.cpu().numpy() for t in block_attention(model, *x, heads=True))
        return [Attention(layers, special, h) for layers, h in zip(att, every)]

    return measure_and_write(
        extractor,
        [f"test-{row:06d}" for row in range(n)],
        list(range(n)),
        Outputs(out_path, rollout_path, heads_path, heads_rollout_path),
        model=model_name,
        dataset=manifest["name"],
        model_record={
            "name": model_name,
            "backend": "rtdl_revisiting_models.FTTransformer",
            "seed": metrics["seed"],
            "test_" + metrics["metric"]: metrics["test"],
            "weights_sha256": digests.of_file(model_path),
            "trained": metrics["compute"],
        },
        dataset_record={"name": manifest["name"], "sha256": manifest["sha256"], "n": n},
        reading=Reading(
            device=device,
            threads=threads,
            batch_size=MEASURE_ROWS,
            overlap=False,  # a table's rows are one forward pass each, on the device training chose
            batch_by_length=False,  # every row has the same tokens
            dump_inputs=0,  # the heatmap figure reads the transformers' dumps only
            attention="every block recomputed from W_q, W_k (checked against the model's), head-averaged in float32, "
            "analysed in float64 on the CPU",
        ),
        condition=condition,
        heads=heads,
        seed=metrics["seed"],
    )
