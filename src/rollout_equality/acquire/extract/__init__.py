"""Attention extraction: one backend per library, one interface.

``load(info, device)`` returns an extractor for a prepared model (see
:mod:`rollout_equality.acquire.models`). Calling it on a list of inputs (strings for
text models, PIL images for image models) returns, for each input alone, an
:class:`~rollout_equality.condition.attention.Attention`: its head-averaged attention over its own tokens
(padding removed, ``layers``: float32 (L, n, n)) and its special-token mask (``special``: bool (n,)), and, called
with ``heads=True``, each head's attention as well (``heads``: float32 (L, H, n, n); the average unchanged, bit for
bit; None without it).

Attention is read with eager attention only; a model that returns none raises. One backend per library:
:mod:`.transformers_backend` (text and vision models of Hugging Face transformers) and :mod:`.timm_backend` (timm's
vision transformers).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

from rollout_equality.config.schema import choices
from rollout_equality.runtime.device import resolve_device

if TYPE_CHECKING:
    from rollout_equality.condition.attention import Attention


class Extractor(Protocol):
    n_layers: int
    preprocessing: dict  # what turned inputs into model inputs (class and settings), for provenance

    def __call__(self, inputs: list[Any], heads: bool = False) -> list[Attention]: ...

    # Optional: ``input_sizes(inputs) -> list[int] | None``, the tokens each input will have (text),
    # so that batches can be formed of inputs of similar size (less padding); None when all are equal.


class NoAttentionError(RuntimeError):
    """The model returned no attention probabilities, or none of the shape the condition is tested on."""


def square_attention(probs: Any, batch: int, model: str, module: str):
    """``probs``, checked to be one full square attention matrix per input and head: a (batch, heads, n, n) tensor.
    Raises :class:`NoAttentionError` naming what ``module`` of ``model`` returned instead (windowed attention such as
    Swin's gives (batch · windows, heads, w², w²); pooled or cross-attention a rectangle)."""
    shape = tuple(getattr(probs, "shape", ()))
    if len(shape) == 4 and shape[0] == batch and shape[2] == shape[3]:
        return probs
    what = "nothing" if probs is None else f"shape {shape}" if shape else type(probs).__name__
    raise NoAttentionError(
        f"{model}: {module} returned {what} for a batch of {batch}, not one square (batch, heads, n, n) attention "
        "matrix per layer over the input's tokens; the condition is tested on full self-attention only (windowed, "
        "pooled and cross-attention are not supported)"
    )


def load(info: dict, device: str, *, max_tokens: int | None = None, image_backend: str | None = None) -> Extractor:
    """An extractor for the model described by ``info`` (the contents of its ``model.json``).

    ``max_tokens``: text inputs are truncated to this many tokens (default: the model's own limit).
    ``image_backend``: for a transformers image model, the image processor's backend (config.yaml's
    ``extraction.image_backend``): ``pil`` (the PIL/numpy pipeline the checkpoints were published with) or
    ``torchvision`` (transformers' own default when torchvision is installed, whose resizing gives slightly
    different pixels). timm models use timm's transforms either way. The extractor's ``preprocessing``
    attribute names what was used, for the records' provenance.
    """
    device = resolve_device(device)
    backends = choices("properties", "extraction", "properties", "image_backend")
    if image_backend is not None and image_backend not in backends:
        raise ValueError(f"image_backend must be one of {backends}; got {image_backend!r}")
    if info["backend"] == "transformers" and info["modality"] == "image" and image_backend is None:
        raise ValueError(
            f"model {info.get('name')!r} reads images: give image_backend ({' or '.join(backends)}; "
            "config.yaml's extraction.image_backend)"
        )
    from rollout_equality.acquire.models import random_seed

    if info["backend"] == "transformers":
        from rollout_equality.acquire.extract.transformers_backend import TransformersExtractor

        return TransformersExtractor(
            info["path"],
            info["modality"],
            device,
            max_tokens=max_tokens,
            image_backend=image_backend,
            seed=random_seed(info),
        )
    if info["backend"] == "timm":
        if info["modality"] != "image":
            raise ValueError(f"model {info.get('name')!r}: the timm backend reads images only")
        from rollout_equality.acquire.extract.timm_backend import TimmExtractor

        return TimmExtractor(
            info["path"], device, random_init=info.get("random_init") if random_seed(info) is not None else None
        )
    raise ValueError(f"unknown backend {info['backend']!r}; use transformers or timm")
