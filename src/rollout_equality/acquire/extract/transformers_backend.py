"""Attention from Hugging Face transformers models (text and vision), eager attention only."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

import numpy as np
import torch

from rollout_equality.acquire.extract import NoAttentionError, square_attention
from rollout_equality.condition.attention import Attention, head_mean
from rollout_equality.runtime.device import exact_float32

log = logging.getLogger(__name__)


def head_average(attentions: tuple[torch.Tensor, ...] | list[torch.Tensor], model_name: str) -> torch.Tensor:
    """Stack per-layer (B, H, N, N) probabilities into (B, L, N, N), averaged over heads in float32
    (:func:`rollout_equality.condition.attention.head_mean`)."""
    if not attentions:
        raise NoAttentionError(
            f"{model_name} returned no attention probabilities; it must be loaded with "
            'attn_implementation="eager" (SDPA and flash attention return none)'
        )
    return torch.stack([head_mean(a) for a in attentions], dim=1)


def attention_modules(model: torch.nn.Module) -> list[tuple[torch.nn.Module, int]] | None:
    """(module, index) of every module whose output tuple holds a layer's attention probabilities at ``index``, in
    the order the forward pass runs them: the modules transformers itself records ``attentions`` from (the model
    class's ``_can_record_outputs``), or None for a model that does not declare them (its attentions are then read
    from ``output_attentions=True``)."""
    specs = (getattr(type(model), "_can_record_outputs", None) or {}).get("attentions")
    if specs is None:
        return None
    found = []
    for spec in specs if isinstance(specs, list) else [specs]:
        if isinstance(spec, type):
            target, index, class_name, layer_name = spec, 1, None, None
        elif isinstance(spec, str):
            target, index, class_name, layer_name = None, 1, spec, None
        else:  # transformers' OutputRecorder
            target, index, class_name, layer_name = spec.target_class, spec.index, spec.class_name, spec.layer_name
        for name, module in model.named_modules():
            matches = (target is not None and isinstance(module, target)) or (
                class_name is not None and name.endswith(class_name)
            )
            if matches and (layer_name is None or f".{layer_name.strip('.')}." in f".{name}."):
                found.append((module, index))
    return found or None


def special_token_count(model: torch.nn.Module) -> int | None:
    """Tokens a vision transformer puts before its patches, read from its embedding parameters.

    CLS (``cls_token``), distillation (``distillation_token``) and register
    (``register_tokens``) parameters each contribute their token count. None when
    the model has no embeddings module of this form.
    """
    emb = getattr(model, "embeddings", None)
    if emb is None:
        return None
    count = 0
    for attr in ("cls_token", "distillation_token", "register_tokens"):
        p = getattr(emb, attr, None)
        if isinstance(p, torch.Tensor):
            count += p.shape[1]
    return count


class TransformersExtractor:
    def __init__(
        self,
        path: str,
        modality: str,
        device: str,
        max_tokens: int | None,
        image_backend: str | None,
        seed: int | None = None,
    ):
        """``seed``: a ``random_init`` model, its weights drawn from the seed
        (:func:`rollout_equality.acquire.models.load_transformers_model`)."""
        import transformers

        from rollout_equality.acquire.models import load_transformers_model

        self.path, self.modality, self.device, self.max_tokens = path, modality, device, max_tokens
        exact_float32()
        self.model = load_transformers_model(path, seed)
        self.model.to(device).eval()
        if self.model.config._attn_implementation != "eager":
            raise NoAttentionError(
                f"{path}: attention implementation is {self.model.config._attn_implementation!r}, not eager"
            )
        self.attention_modules = attention_modules(self.model)
        self.n_layers = (
            self.model.config.num_hidden_layers
            if hasattr(self.model.config, "num_hidden_layers")
            else self.model.config.n_layers
        )
        if modality == "text":
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(path)
            limit = getattr(self.model.config, "max_position_embeddings", None)
            if limit is not None and self.model.config.model_type in ("roberta", "xlm-roberta", "camembert"):
                limit -= 2  # these models offset positions by padding_idx + 1
            self.max_length = min(x for x in (max_tokens, limit, self.tokenizer.model_max_length) if x)
            self.preprocessing = {"tokenizer": type(self.tokenizer).__name__, "max_length": self.max_length}
        else:
            if int(transformers.__version__.split(".")[0]) >= 5:
                self.processor = transformers.AutoImageProcessor.from_pretrained(path, backend=image_backend)
            else:  # transformers 4: the PIL pipeline is the "slow" processor
                self.processor = transformers.AutoImageProcessor.from_pretrained(
                    path, use_fast=image_backend == "torchvision"
                )
            processor_class = type(
                self.processor
            ).__name__  # transformers falls back to the other backend with a warning
            self.preprocessing = {
                "image_processor": processor_class,
                "backend": "pil" if processor_class.endswith("Pil") else "torchvision",
                **{
                    k: v
                    for k, v in self.processor.to_dict().items()
                    if k in ("size", "crop_size", "resample", "image_mean", "image_std", "do_center_crop")
                },
            }
            self.patch_size = self.model.config.patch_size
            self.n_special = special_token_count(self.model)
            if self.n_special is None:
                raise ValueError(f"{path}: cannot tell CLS/distillation/register tokens of this vision model")

    def input_sizes(self, inputs: list[Any]) -> list[int] | None:
        """Tokens of each text input as the forward pass will see it (specials in, truncated to
        ``max_length``); None for images, which all have the same number. Batches of similar sizes
        waste less on padding (:func:`rollout_equality.measure.measure_inputs`)."""
        if self.modality != "text":
            return None
        return [len(ids) for ids in self._tokenize(inputs)["input_ids"]]

    def _tokenize(self, texts: list[str], **kwargs):
        """The tokenizer as the forward pass calls it (truncated to ``max_length``), so that
        :meth:`input_sizes` counts what :meth:`_text` runs."""
        return self.tokenizer(list(texts), truncation=True, max_length=self.max_length, **kwargs)

    def _attention(self, model_inputs: dict[str, torch.Tensor], heads: bool = False):
        """Head-averaged attention of every layer, (B, L, N, N) float32 on the device; with ``heads``, also every
        head's, (B, L, H, N, N) float32, as the pair (averaged, per head). Each layer's (B, H, N, N) probabilities
        are averaged as the layer produces them (hooks on the modules of :func:`attention_modules`), so that one
        layer's full attention at a time is held, not every layer's (unless ``heads`` keeps them); a model without
        such modules returns all of them at the end (``output_attentions=True``). The average is the same with
        and without ``heads``."""
        if self.attention_modules is None:
            attentions = self.model(**model_inputs, output_attentions=True).attentions
            avg = self._counted(len(attentions), "returned", head_average(attentions, self.path))
            return (avg, torch.stack([a.float() for a in attentions], dim=1)) if heads else avg
        batch = next(iter(model_inputs.values())).shape[0]
        layers: list[torch.Tensor] = []
        per_head: list[torch.Tensor] = []

        def capture(module, args, output, index):
            probs = output[index] if isinstance(output, (tuple, list)) else None
            probs = square_attention(probs, batch, self.path, type(module).__name__)
            layers.append(head_mean(probs))
            if heads:
                per_head.append(probs.float())

        handles = [m.register_forward_hook(partial(capture, index=i)) for m, i in self.attention_modules]
        try:
            self.model(**model_inputs)
        finally:
            for handle in handles:
                handle.remove()
        if not layers:
            return head_average(layers, self.path)  # raises: no attention captured
        avg = self._counted(len(layers), "captured by hooks", torch.stack(layers, dim=1))
        return (avg, torch.stack(per_head, dim=1)) if heads else avg

    def _counted(self, n: int, how: str, average: torch.Tensor) -> torch.Tensor:
        """``average`` when ``n`` attention maps is the model's layer count (its config's), else raises naming both:
        hooks that match extra modules, or miss some, would otherwise add or drop layers without a word."""
        if n != self.n_layers:
            raise NoAttentionError(
                f"{self.path}: {n} attention maps {how} in one forward pass, but its config has {self.n_layers} "
                f"layers (num_hidden_layers): the attention modules found are not one per layer"
            )
        return average

    @torch.inference_mode()
    def __call__(self, inputs: list[Any], heads: bool = False) -> list[Attention]:
        """An :class:`~rollout_equality.condition.attention.Attention` per input; with ``heads``, each head's too."""
        return self._text(inputs, heads) if self.modality == "text" else self._images(inputs, heads)

    def _text(self, texts: list[str], heads: bool) -> list[Attention]:
        enc = self._tokenize(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt")
        model_inputs = {k: v.to(self.device) for k, v in enc.items() if k in self.tokenizer.model_input_names}
        avg, per_head = self._attention(model_inputs, heads=True) if heads else (self._attention(model_inputs), None)
        results = []
        for b in range(len(texts)):
            keep = enc["attention_mask"][b].bool()
            idx = keep.nonzero().squeeze(1).to(self.device)
            layers = avg[b].index_select(1, idx).index_select(2, idx)
            special = enc["special_tokens_mask"][b][keep].bool()
            every = per_head[b].index_select(2, idx).index_select(3, idx).cpu().numpy() if heads else None
            results.append(Attention(layers.cpu().numpy(), special.numpy(), every))
        return results

    def _images(self, images: list[Any], heads: bool) -> list[Attention]:
        pixels = self.processor(images=list(images), return_tensors="pt")["pixel_values"].to(self.device)
        avg, per_head = (
            self._attention({"pixel_values": pixels}, heads=True)
            if heads
            else (self._attention({"pixel_values": pixels}), None)
        )
        n = avg.shape[-1]
        n_patches = (pixels.shape[-2] // self.patch_size) * (pixels.shape[-1] // self.patch_size)
        if n - n_patches != self.n_special:
            raise ValueError(
                f"{self.path}: {n} tokens for {n_patches} patches, but the embeddings declare "
                f"{self.n_special} CLS/distillation/register tokens"
            )
        special = np.zeros(n, dtype=bool)
        special[: self.n_special] = True  # CLS, then distillation or register tokens, then patches
        avg = avg.cpu().numpy()
        per_head = per_head.cpu().numpy() if heads else None
        return [Attention(avg[b], special.copy(), per_head[b] if heads else None) for b in range(len(images))]
