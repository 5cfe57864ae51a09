r"""A model's attention, as your own code holds it, to the workflow's records (:func:`attention_records`).

What a model returns goes in as it is:

* transformers, ``model(**inputs, output_attentions=True).attentions``: a tuple of (batch, heads, T, T) tensors, one
  per layer (the model loaded with ``attn_implementation="eager"``), or that tuple stacked, (layers, batch, heads, T,
  T);
* timm, ``timm.utils.AttentionExtract(model)(pixels)``: a dict of the same tensors by block, in the blocks' order.

The special tokens are the tokenizer's ``special_tokens_mask`` (its encoding can be passed whole: the padding is then
read from its ``attention_mask``), any (batch, T) or (T,) mask, or a vision transformer's leading prefix tokens
(timm's ``model.num_prefix_tokens``: CLS, distillation and register tokens).

Each input's attention is cut to its own tokens and averaged over heads as the workflow's extractors average it
(:func:`rollout_equality.condition.attention.head_mean`), then analysed by the one analysis of every record
(:func:`rollout_equality.condition.analysis.analyse`): the rows are rule ``measure``'s, with its schemas
(:mod:`rollout_equality.condition.records`), as pandas DataFrames.

Half precision is accepted on request only. By default every row of every head must sum to 1 within
``row_sum_atol`` (the schema's ``condition.row_sum_atol``), as the workflow asks; probabilities rounded to float16 or
bfloat16 stray further (up to half the type's machine epsilon, :data:`HALF_EPSILON`), and the refusal names the type
and how to proceed. ``row_sum_atol="dtype"`` (or a type's name, for float32 tensors from a half-precision model) takes
that type's epsilon as the tolerance; ``renormalise=True`` scales every row to sum to 1 before the analysis. The
result records what was done (:attr:`AttentionRecords.attention`), and so does every file it writes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from typing import Any, Sequence

import numpy as np

from rollout_equality.condition.analysis import Records, analyse
from rollout_equality.condition.attention import Attention, head_mean
from rollout_equality.condition.dobrushin import (
    DEFAULT_ATOL,
    DEFAULT_ENGINE,
    DEFAULT_ROW_SUM_ATOL,
    HALF_EPSILON,
    Engine,
    dtype_name,
)
from rollout_equality.condition.records import SCHEMAS, write_head_records, write_records
from rollout_equality.config.paths import companions
from rollout_equality.config.settings import PAPER_FUSION, HeadSettings

METADATA_KEY = "rollout_equality"
"""Where a records file (its Parquet metadata) and each DataFrame of :class:`AttentionRecords` (``frame.attrs``) hold
what was done."""


@dataclasses.dataclass(frozen=True)
class AttentionRecords:
    """The records of a batch of inputs, as the workflow writes them (one DataFrame per records file, the files'
    column types), and what was done to read them."""

    layers: Any
    """pandas DataFrame: one row per input, layer and token set (``content``, ``all``)
    (:data:`~rollout_equality.condition.records.LAYER_SCHEMA`)."""
    rollout: Any
    """One row per input, token set and depth (:data:`~rollout_equality.condition.records.ROLLOUT_SCHEMA`)."""
    heads: Any
    """One row per input, layer, token set and head (``per_head``), and per fusion other than mean (``fusions``)
    (:data:`~rollout_equality.condition.records.HEAD_SCHEMA`); no rows when neither was asked for."""
    heads_rollout: Any
    """The rollout of each fusion other than mean
    (:data:`~rollout_equality.condition.records.FUSION_ROLLOUT_SCHEMA`)."""
    metadata: dict
    """What was done, as a records file's metadata states it: ``condition`` (the tolerances), ``attention`` (the
    type the attention came in, the row-sum tolerance and where it came from, whether rows were renormalised, the
    largest distance of a row sum from 1 before that) and ``analysis`` (per head, the fusions)."""
    rows: Records = dataclasses.field(repr=False, compare=False)
    """The rows as the analysis gave them (:class:`rollout_equality.condition.analysis.Records`), what
    :meth:`write` writes."""

    @property
    def attention(self) -> dict:
        """How the attention was read: ``dtype``, ``row_sum_atol``, ``row_sum_atol_from`` (the number given, or the
        type whose epsilon it is), ``renormalised``, ``largest_row_sum_error``."""
        return self.metadata["attention"]

    def write(self, path: str | os.PathLike) -> dict[str, str]:
        """Write the four records files as the workflow names them beside ``path``
        (:func:`rollout_equality.config.paths.companions`: ``r.parquet``, ``r.rollout.parquet``, ``r.heads.parquet``,
        ``r.heads.rollout.parquet``), each atomically, with :attr:`metadata` as their provenance; returns their paths
        by kind. :func:`rollout_equality.condition.records.read_records` reads them back."""
        paths = {"records": str(path), **companions(str(path))}
        rows, heads_metadata = self.rows, self.metadata
        metadata = {key: value for key, value in heads_metadata.items() if key != "analysis"}
        write_head_records(paths["heads"], paths["heads_rollout"], rows.heads, rows.heads_rollout, heads_metadata)
        write_records(paths["records"], paths["rollout"], rows.layer, rows.rollout, metadata)
        return paths


def _frame(rows: list[dict], kind: str, metadata: dict):
    """``rows`` as a DataFrame with the records file's column types (what
    :func:`rollout_equality.condition.records.read_records` gives for the file)."""
    import pyarrow as pa

    frame = pa.Table.from_pylist(rows, schema=SCHEMAS[kind]).to_pandas()
    frame.attrs[METADATA_KEY] = metadata
    return frame


def _layer_tensors(attentions: Any) -> list:
    """The per-layer (batch, heads, T, T) tensors of ``attentions`` (a tuple or list of them, a dict of them in
    layer order, or an array (layers, batch, heads, T, T)), as torch tensors where they are."""
    import torch

    if isinstance(attentions, Mapping):
        attentions = list(attentions.values())
    if isinstance(attentions, (list, tuple)):
        layers = [a if isinstance(a, torch.Tensor) else torch.from_numpy(np.asarray(a)) for a in attentions]
    else:
        stacked = attentions if isinstance(attentions, torch.Tensor) else torch.from_numpy(np.asarray(attentions))
        if stacked.ndim != 5:
            raise ValueError(
                "attentions: give a tuple of (batch, heads, T, T) tensors, one per layer (transformers' "
                "output_attentions), or an array of shape (layers, batch, heads, T, T); got an array of shape "
                f"{tuple(stacked.shape)}"
            )
        layers = list(stacked.unbind(0))
    if not layers:
        raise ValueError(
            "attentions: no layer; a transformers model returns none unless it is loaded with "
            'attn_implementation="eager" and called with output_attentions=True'
        )
    shape = tuple(layers[0].shape)
    for index, layer in enumerate(layers):
        if layer.ndim != 4 or layer.shape[-1] != layer.shape[-2]:
            raise ValueError(
                f"attentions: layer {index} has shape {tuple(layer.shape)}, not (batch, heads, T, T): the condition "
                "is tested on full square self-attention"
            )
        if tuple(layer.shape) != shape:
            raise ValueError(f"attentions: layer {index} has shape {tuple(layer.shape)}, layer 0 {shape}")
        if not layer.is_floating_point():
            raise ValueError(f"attentions: layer {index} is {dtype_name(layer)}, not probabilities")
    return layers


def _as_numpy(mask: Any) -> np.ndarray:
    if hasattr(mask, "detach"):
        mask = mask.detach().cpu().numpy()
    return np.asarray(mask)


def _masks(special, attention_mask, num_prefix_tokens, batch: int, T: int) -> tuple[np.ndarray, np.ndarray]:
    """(special (batch, T) bool, kept (batch, T) bool): each input's special tokens and its own tokens (no
    padding)."""
    if isinstance(special, Mapping):  # a tokenizer's encoding (transformers' BatchEncoding)
        if "special_tokens_mask" not in special:
            raise ValueError(
                "special: the encoding holds no special_tokens_mask; call the tokenizer with "
                "return_special_tokens_mask=True (and leave that key out of the model's inputs)"
            )
        if attention_mask is None:
            attention_mask = special.get("attention_mask")
        special = special["special_tokens_mask"]
    if (special is None) == (num_prefix_tokens is None):
        raise ValueError(
            "give the special tokens one way: special (a (batch, T) or (T,) mask, e.g. the tokenizer's "
            "special_tokens_mask, or its encoding) or num_prefix_tokens (a vision transformer's leading CLS, "
            "distillation and register tokens: timm's model.num_prefix_tokens)"
        )
    if num_prefix_tokens is not None:
        if not 0 <= int(num_prefix_tokens) < T:
            raise ValueError(f"num_prefix_tokens must lie in 0..{T - 1} for {T} tokens; got {num_prefix_tokens}")
        mask = np.zeros((batch, T), dtype=bool)
        mask[:, : int(num_prefix_tokens)] = True
    else:
        mask = _as_numpy(special)
        if mask.shape == (T,):
            mask = np.broadcast_to(mask, (batch, T))
        if mask.shape != (batch, T):
            raise ValueError(
                f"special has shape {mask.shape}; the attention has {batch} inputs of {T} tokens: give ({batch}, {T}) "
                f"or ({T},)"
            )
        mask = mask.astype(bool)
    if attention_mask is None:
        kept = np.ones((batch, T), dtype=bool)
    else:
        kept = _as_numpy(attention_mask)
        if kept.shape != (batch, T):
            raise ValueError(f"attention_mask has shape {kept.shape}; the attention has {batch} inputs of {T} tokens")
        kept = kept.astype(bool)
    return mask, kept


def row_sum_tolerance(row_sum_atol: float | str, dtype: str | None) -> tuple[float, str]:
    """(the tolerance of a row sum, where it came from) for ``row_sum_atol`` given as a number, as ``"dtype"`` (the
    machine epsilon of the attention's own type ``dtype``) or as a type's name (``"bfloat16"``, ``"float16"``: for
    float32 tensors from a half-precision model). A type's epsilon never tightens the schema's default."""
    if not isinstance(row_sum_atol, str):
        if not row_sum_atol >= 0:
            raise ValueError(f"row_sum_atol must be non-negative; got {row_sum_atol}")
        return float(row_sum_atol), "given"
    name = dtype if row_sum_atol == "dtype" else row_sum_atol
    if name in HALF_EPSILON:
        return max(HALF_EPSILON[name], DEFAULT_ROW_SUM_ATOL), name
    if name in ("float32", "float64"):
        return DEFAULT_ROW_SUM_ATOL, name
    raise ValueError(
        f"row_sum_atol must be a number, 'dtype' (the attention's own type) or one of {', '.join(HALF_EPSILON)}; "
        f"got {row_sum_atol!r}" + (f" (the attention is {dtype})" if row_sum_atol == "dtype" else "")
    )


def _refusal(error: float, where: str, tolerance: float, dtype: str | None) -> str:
    """Why a row sum ``error`` away from 1 is refused, and how to proceed."""
    said = f"row sums stray from 1 by up to {error:.3g} ({where}), beyond row_sum_atol {tolerance:g}"
    if dtype in HALF_EPSILON:
        return (
            f"{said}: the attention is {dtype}, whose rounding moves a row sum by up to {HALF_EPSILON[dtype] / 2:.2g}. "
            f"To analyse it, say so: row_sum_atol='dtype' (the {dtype} machine epsilon, {HALF_EPSILON[dtype]:g}), "
            "and renormalise=True to scale each row to sum to 1 first; the result records both"
        )
    kinds = " or ".join(repr(name) for name in HALF_EPSILON)
    return (
        f"{said}; the attention is {dtype}. Attention probabilities (after the softmax, over every key) sum to 1: "
        f"if the model ran in half precision, say so with row_sum_atol={kinds} (and renormalise=True to scale "
        "each row to sum to 1 first; the result records both); if the batch is padded, give attention_mask"
    )


def attention_records(
    attentions: Any,
    special: Any = None,
    *,
    attention_mask: Any = None,
    num_prefix_tokens: int | None = None,
    ids: Sequence[Any] | None = None,
    model: str = "model",
    dataset: str = "inputs",
    per_head: bool = False,
    fusions: Sequence[str] = (PAPER_FUSION,),
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float | str = DEFAULT_ROW_SUM_ATOL,
    renormalise: bool = False,
    engine: Engine = DEFAULT_ENGINE,
) -> AttentionRecords:
    """The workflow's records of a batch of inputs from the attention a model returned for it.

    attentions: a tuple (or list) of (batch, heads, T, T) tensors, one per layer, as transformers returns them with
    ``output_attentions=True``; a dict of them in layer order (timm's ``AttentionExtract``); or an array or tensor
    (layers, batch, heads, T, T). torch tensors on any device, or numpy arrays.
    special: the special tokens, True (or 1) for each: a (batch, T) mask such as the tokenizer's
    ``special_tokens_mask``, a (T,) mask shared by every input, or the tokenizer's encoding itself (its
    ``special_tokens_mask``, and its ``attention_mask`` unless one is given). Or instead num_prefix_tokens: a vision
    transformer's leading special tokens (timm's ``model.num_prefix_tokens``).
    attention_mask: (batch, T), 1 for an input's own tokens, 0 for padding; each input is analysed on its own tokens
    (None: every position is a token; a batch whose padding was not given is refused when it shows, as keys no query
    attends to).
    ids: each input's ``input_id`` in the records (default ``0``, ``1``, …); model, dataset: the rows' names.
    per_head, fusions: what is measured beyond the head average (config ``analysis``;
    :class:`rollout_equality.config.settings.HeadSettings` checks them): every head's own attention, and the fusions
    (``mean`` always; ``max``, ``min`` in the heads file).
    atol: the condition's tolerance (config ``condition.atol``).
    row_sum_atol: how far a row of a head may sum from 1: a number (the default is the workflow's, config
    ``condition.row_sum_atol``), ``"dtype"`` (the machine epsilon of the attention's type, for float16 and bfloat16
    tensors) or a type's name (``"bfloat16"``, ``"float16"``: float32 tensors from a half-precision model).
    renormalise: scale every row of every head, and of the head average, to sum to 1 before the analysis.
    engine: how the analysis computes (the records are the same with every engine).

    Returns an :class:`AttentionRecords`. Raises ValueError naming what is wrong with the input, and, for row sums
    beyond ``row_sum_atol``, the attention's type and how to proceed.
    """
    import torch

    settings = HeadSettings(per_head=per_head, fusions=tuple(fusions))
    layers = _layer_tensors(attentions)
    batch, _, T, _ = layers[0].shape
    dtype = dtype_name(layers[0])
    tolerance, source = row_sum_tolerance(row_sum_atol, dtype)
    special_mask, kept = _masks(special, attention_mask, num_prefix_tokens, batch, T)
    ids = [str(i) for i in (range(batch) if ids is None else ids)]
    if len(ids) != batch:
        raise ValueError(f"{len(ids)} ids for a batch of {batch} inputs")

    with torch.inference_mode():
        average = torch.stack([head_mean(layer) for layer in layers], dim=1)  # (batch, L, T, T) float32
        inputs, largest = [], 0.0
        for b in range(batch):
            idx = torch.from_numpy(np.flatnonzero(kept[b])).to(average.device)
            every = torch.stack([layer[b] for layer in layers]).index_select(2, idx).index_select(3, idx)
            if attention_mask is None and len(idx) > 1:
                unattended = (every[0].float().sum(dim=(0, 1)) == 0).nonzero().flatten().tolist()
                if unattended:
                    raise ValueError(
                        f"input {ids[b]}: no query of any head of layer 0 attends to tokens {unattended}: padding? "
                        "give attention_mask (or the tokenizer's encoding as special)"
                    )
            deviation = (every.double().sum(dim=-1) - 1).abs()  # (L, H, n)
            error = float(deviation.max())
            if error > tolerance:
                layer, head, row = np.unravel_index(int(deviation.argmax()), tuple(deviation.shape))
                raise ValueError(
                    _refusal(error, f"input {ids[b]}, layer {layer}, head {head}, row {row}", tolerance, dtype)
                )
            largest = max(largest, error)
            mean = average[b].index_select(1, idx).index_select(2, idx).cpu().numpy()
            heads = every.float().cpu().numpy() if settings.on else None
            if renormalise:
                mean = _renormalised(mean)
                heads = None if heads is None else _renormalised(heads)
            inputs.append(Attention(mean, special_mask[b][kept[b]].copy(), heads))

    records = Records.joined(
        analyse(
            inputs,
            ids,
            model=model,
            dataset=dataset,
            settings=settings,
            atol=atol,
            row_sum_atol=tolerance,
            engine=engine,
        )
    )
    metadata = {
        "condition": {"atol": float(atol), "row_sum_atol": tolerance},
        "attention": {
            "dtype": dtype,
            "row_sum_atol": tolerance,
            "row_sum_atol_from": source,
            "renormalised": bool(renormalise),
            "largest_row_sum_error": largest,
        },
        "analysis": {"per_head": settings.per_head, "fusions": list(settings.fusions)},
    }
    return AttentionRecords(
        _frame(records.layer, "layer", metadata),
        _frame(records.rollout, "rollout", metadata),
        _frame(records.heads, "heads", metadata),
        _frame(records.heads_rollout, "heads rollout", metadata),
        metadata,
        records,
    )


def _renormalised(stack: np.ndarray) -> np.ndarray:
    """``stack`` in float64, each row divided by its sum."""
    stack = np.asarray(stack, dtype=np.float64)
    return stack / stack.sum(axis=-1, keepdims=True)
