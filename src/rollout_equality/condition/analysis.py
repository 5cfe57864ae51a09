r"""One analysis for every record: the condition and rollout of a stack of matrices per layer, with a label.

An input's attention (:class:`Attention`: its head-averaged layers, its special-token mask and, where they were kept,
every head's attention) gives one stack of matrices per layer for each label of :func:`labels`:

* ``mean``: the head-averaged layers (L, n, n), the paper's matrices: the layer and rollout records
  (:data:`rollout_equality.condition.records.LAYER_SCHEMA`, :data:`~rollout_equality.condition.records.ROLLOUT_SCHEMA`);
* ``per head``: every head's own attention (L, H, n, n): rows of the heads file with ``head`` set
  (:data:`~rollout_equality.condition.records.HEAD_SCHEMA`);
* each other fusion of :class:`rollout_equality.config.settings.HeadSettings` (``max``, ``min``): the heads fused
  (:func:`rollout_equality.condition.heads.fuse`), (L, n, n): rows of the heads file with ``fusion`` set, and of its
  rollout companion (:data:`~rollout_equality.condition.records.FUSION_ROLLOUT_SCHEMA`).

:func:`analyse` tests every stack on both token sets (``all``: every token; ``content``: the special tokens removed and
each row renormalised, :func:`rollout_equality.condition.dobrushin.restrict`) with the same kernel, all layers (and
heads) of a stack in one call; a stack of one matrix per layer also gives the κ of its rollout, the product of
½(I + A_l) (:func:`rollout_equality.condition.dobrushin._rollout_kappa`). Fusing first and renormalising, then
restricting and renormalising, is the same as restricting first, since a row's scale cancels.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Executor
from typing import Any, Iterable, NamedTuple, Sequence

import numpy as np

from rollout_equality.condition.attention import Attention
from rollout_equality.condition.dobrushin import (
    DEFAULT_ATOL,
    DEFAULT_ENGINE,
    DEFAULT_ROW_SUM_ATOL,
    Engine,
    _rollout_kappa,
    check_stochastic,
    equality_condition,
    restrict,
)
from rollout_equality.condition.heads import _fuse_checked
from rollout_equality.condition.records import TOKEN_SETS
from rollout_equality.config.settings import OFF, PAPER_FUSION, HeadSettings

PER_HEAD = "per head"
"""The label of every head's own attention."""


class Records(NamedTuple):
    """The rows of the four records files (:mod:`rollout_equality.condition.records`) of one input, or of several one
    after the other (:meth:`joined`)."""

    layer: list[dict[str, Any]]
    """Per layer and token set (:data:`~rollout_equality.condition.records.LAYER_SCHEMA`)."""
    rollout: list[dict[str, Any]]
    """Per token set and depth (:data:`~rollout_equality.condition.records.ROLLOUT_SCHEMA`)."""
    heads: list[dict[str, Any]]
    """Per layer, token set, and head or fusion (:data:`~rollout_equality.condition.records.HEAD_SCHEMA`); none where
    the settings measure nothing beyond the head average."""
    heads_rollout: list[dict[str, Any]]
    """Per fusion, token set and depth (:data:`~rollout_equality.condition.records.FUSION_ROLLOUT_SCHEMA`)."""

    @classmethod
    def joined(cls, parts: Iterable[Records]) -> Records:
        """The rows of ``parts``, each file's one part after the other."""
        parts = list(parts)
        return cls(*([row for part in parts for row in part[i]] for i in range(len(cls._fields))))


def labels(settings: HeadSettings) -> tuple[str, ...]:
    """The stacks an input gives under ``settings``, in the order of the files' rows: ``mean``, then ``per head``
    (``settings.per_head``), then the other fusions (``settings.extra_fusions``)."""
    return (PAPER_FUSION, *((PER_HEAD,) if settings.per_head else ()), *settings.extra_fusions)


class _Input(NamedTuple):
    stacks: dict[str, np.ndarray]
    """Float64 stack by label."""
    special: np.ndarray
    n_heads: int | None
    """The heads per layer, where they were kept."""


def _stacks(attention: Attention, settings: HeadSettings, row_sum_atol: float, what: str) -> _Input:
    """One input's stacks by label and special-token mask, its shapes checked; ``what`` names it."""
    layers = np.asarray(attention.layers, dtype=np.float64)
    special = np.asarray(attention.special, dtype=bool)
    if layers.ndim != 3 or layers.shape[1] != layers.shape[2]:
        raise ValueError(f"{what}: attention must have shape (layers, n, n); got {layers.shape}")
    n_layers, n = layers.shape[:2]
    if special.shape != (n,):
        raise ValueError(f"{what}: special-token mask has shape {special.shape}, attention has n = {n}")
    if special.all():
        raise ValueError(f"{what}: every token is special; there is no content token to analyse")
    stacks = {PAPER_FUSION: layers}
    if not settings.on:
        return _Input(stacks, special, None)
    if attention.heads is None:
        raise ValueError(
            f"{what}: the heads analysis is on ({settings}) but the attention holds no heads (call the extractor "
            "with heads=True)"
        )
    heads = np.asarray(attention.heads, dtype=np.float64)
    if heads.ndim != 4 or heads.shape[0] != n_layers or heads.shape[2:] != (n, n):
        raise ValueError(
            f"{what}: per-head attention must have shape (layers, heads, n, n) = ({n_layers}, H, {n}, {n}); "
            f"got {heads.shape}"
        )
    if settings.per_head:
        stacks[PER_HEAD] = heads
    if settings.extra_fusions:
        valid = check_stochastic(heads, row_sum_atol, name="heads")  # once for every fusion of the input
        stacks.update({fusion: _fuse_checked(valid, fusion) for fusion in settings.extra_fusions})
    return _Input(stacks, special, heads.shape[1])


def _analyse_stack(stack, special, token_set, atol, row_sum_atol, engine):
    """(condition fields by layer (and head), κ of the rollout by depth (None for a stack of several matrices per
    layer), n) of one stack of one input on one token set."""
    A = restrict(stack, ~special, row_sum_atol, engine) if token_set == "content" else stack
    res = equality_condition(A, atol=atol, row_sum_atol=row_sum_atol, engine=engine).as_dict()
    # A was validated by the condition test just now (rollout_kappa would check it again: ~1 ms); the products'
    # bounds reuse the layers' κ(A) and κ(½(I+A)) computed above (rollout() recomputes them)
    kappa_rollout = _rollout_kappa(A, row_sum_atol, engine) if A.ndim == 3 else None
    return res, kappa_rollout, A.shape[-1]


def _condition_rows(fields: dict[str, Any], res: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """``fields`` and the condition's fields of each layer of ``res`` (arrays by layer), or of each (layer, head)
    (arrays by layer and head: a row per head, ``head`` set)."""
    keys = [key for key in res if key != "n"]
    shape = res[keys[0]].shape
    if len(shape) == 1:
        cells = [((layer,), {"layer": layer}) for layer in range(shape[0])]
    else:
        cells = [
            ((layer, head), {"layer": layer, "head": head}) for layer in range(shape[0]) for head in range(shape[1])
        ]
    return [{**fields, **where, **{key: res[key][at].item() for key in keys}} for at, where in cells]


def depth_rows(fields: dict[str, Any], res: dict[str, np.ndarray], kappa_rollout: np.ndarray) -> list[dict[str, Any]]:
    """One rollout row per depth of one input and token set: ``fields`` (who and what was analysed) with the depth,
    the number of layers, κ of the rollout (``kappa_rollout``, by depth) and the products of κ(½(I + A)) and of the
    bound over the layers up to that depth (``res``: the condition's fields by layer)."""
    product_kappa_half, product_bound = np.cumprod(res["kappa_half"]), np.cumprod(res["bound"])
    n_layers = len(product_bound)
    return [
        {
            **fields,
            "depth": depth,
            "n_layers": n_layers,
            "kappa_rollout": float(kappa_rollout[depth]),
            "product_kappa_half": float(product_kappa_half[depth]),
            "product_bound": float(product_bound[depth]),
        }
        for depth in range(n_layers)
    ]


def _rows(label: str, identity: dict[str, Any], token_set: str, done, n_layers: int, n_heads: int | None) -> Records:
    """The rows one stack gives on one token set (``done``: what :func:`_analyse_stack` returned)."""
    res, kappa_rollout, n = done
    if label == PAPER_FUSION:
        fields = {**identity, "token_set": token_set, "n_tokens": n}
        return Records(
            _condition_rows({**fields, "n_layers": n_layers}, res), depth_rows(fields, res, kappa_rollout), [], []
        )
    layout = {"n_layers": n_layers, "n_heads": n_heads, "token_set": token_set, "n_tokens": n}
    if label == PER_HEAD:
        return Records([], [], _condition_rows({**identity, **layout, "fusion": None}, res), [])
    fused = {**identity, **layout, "fusion": label}
    rollout = depth_rows(
        {**identity, "fusion": label, "n_heads": n_heads, "token_set": token_set, "n_tokens": n}, res, kappa_rollout
    )
    return Records([], [], _condition_rows({**fused, "head": None}, res), rollout)


def analyse(
    batch: Sequence[Attention | tuple],
    input_ids: Sequence[str],
    *,
    model: str,
    dataset: str,
    seed: int | None = None,
    settings: HeadSettings = OFF,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
    pool: Executor | None = None,
    engine: Engine = DEFAULT_ENGINE,
) -> list[Records]:
    """The records of each input of a batch: its layer and rollout rows and, where ``settings`` asks for them
    (config ``analysis``: per head, the fusions other than mean), its heads file's rows, one :class:`Records` per
    input, in order.

    batch: an :class:`Attention` per input (or a tuple of its fields: (layers, special) or (layers, special,
    heads)); the heads are needed where ``settings.on``. ``model``, ``dataset``, ``seed`` (a trained
    FT-Transformer's; None: null) and the ids name the rows. ``atol``, ``row_sum_atol``: the condition's tolerances.
    ``engine``: how the analysis computes (:class:`rollout_equality.condition.dobrushin.Engine`; the records are the
    same with every engine). ``pool``: where the work runs. None: here, with ``engine`` as given (by default each
    matrix's work spread over numba's threads). An executor: one task per input, token set and label, each on its
    worker's thread alone (``engine`` made serial); on a few cores this keeps them busier than a thread pool per
    matrix. Rollout products run on torch: give torch one thread while the pool works
    (:func:`rollout_equality.measure.measure_inputs` does). The records are the same either way.
    """
    if len(batch) != len(input_ids):
        raise ValueError(f"{len(input_ids)} ids for {len(batch)} inputs")
    attentions = [item if isinstance(item, Attention) else Attention(*item) for item in batch]
    inputs = [_stacks(a, settings, row_sum_atol, f"{model}/{i}") for a, i in zip(attentions, input_ids)]
    if pool is not None:
        engine = dataclasses.replace(engine, serial=True)
    order = labels(settings)
    tasks = [
        (one.stacks[label], one.special, token_set, atol, row_sum_atol, engine)
        for one in inputs
        for token_set in TOKEN_SETS
        for label in order
    ]
    if pool is None:
        done = [_analyse_stack(*task) for task in tasks]
    else:
        futures = [pool.submit(_analyse_stack, *task) for task in tasks]
        done = [f.result() for f in futures]
    out = []
    results = iter(done)
    for one, input_id in zip(inputs, input_ids):
        identity = {"model": model, "seed": seed, "dataset": dataset, "input_id": input_id}
        n_layers = one.stacks[PAPER_FUSION].shape[0]
        parts = [
            _rows(label, identity, token_set, next(results), n_layers, one.n_heads)
            for token_set in TOKEN_SETS
            for label in order
        ]
        out.append(Records.joined(parts))
    return out
