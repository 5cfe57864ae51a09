"""One input's attention, as an extractor gives it and the analysis reads it (:class:`Attention`).

Apart from :mod:`rollout_equality.condition.analysis` so that an extractor names it without starting the analysis's
compiler (numba): a job whose provenance says whether numba ran (:func:`rollout_equality.runtime.provenance.provenance`)
imports it only when it analyses.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Attention(NamedTuple):
    """One input's attention over its own tokens (no padding), as an extractor gives it
    (:mod:`rollout_equality.acquire.extract`) and :func:`rollout_equality.condition.analysis.analyse` reads it."""

    layers: np.ndarray
    """(L, n, n), each layer's attention averaged over its heads (float32 or better)."""
    special: np.ndarray
    """(n,) bool, True for a special token (CLS, registers, separators, …)."""
    heads: np.ndarray | None = None
    """(L, H, n, n), every head's attention (float32 or better); None where the heads were not kept."""


def head_mean(probs):
    """One layer's attention averaged over its heads, as every record's ``layers`` is made: a torch tensor
    (B, H, n, n) of any floating type to (B, n, n) float32, on its own device (torch's mean over the heads in
    float32). The extractors (:mod:`rollout_equality.acquire.extract`) and
    :func:`rollout_equality.condition.from_model.attention_records` average through it, so that a model's attention
    gives the same records either way."""
    return probs.float().mean(dim=1)
