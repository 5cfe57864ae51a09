"""Attention from Hugging Face transformers models (text and vision), eager attention only."""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import torch

from rollout_equality.extract import NoAttentionError

log = logging.getLogger(__name__)


def head_average(attentions: tuple[torch.Tensor, ...] | list[torch.Tensor], model_name: str) -> torch.Tensor:
    """Stack per-layer (B, H, N, N) probabilities into (B, L, N, N), averaged over heads in float32."""
    if not attentions:
        raise NoAttentionError(
            f"{model_name} returned no attention probabilities; it must be loaded with "
            'attn_implementation="eager" (SDPA and flash attention return none)'
        )
    return torch.stack([a.float().mean(dim=1) for a in attentions], dim=1)


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
        """``seed``: a ``random_init`` model, its weights drawn from the seed (:func:`load_transformers_model`)."""
        import transformers

        from rollout_equality.models import load_transformers_model

        self.path, self.modality, self.device, self.max_tokens = path, modality, device, max_tokens
        self.model = load_transformers_model(path, seed)
        self.model.to(device).eval()
        if self.model.config._attn_implementation != "eager":
            raise NoAttentionError(
                f"{path}: attention implementation is {self.model.config._attn_implementation!r}, not eager"
            )
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

    @torch.inference_mode()
    def __call__(self, inputs: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        return self._text(inputs) if self.modality == "text" else self._images(inputs)

    def _text(self, texts: list[str]) -> list[tuple[np.ndarray, np.ndarray]]:
        enc = self._tokenize(texts, padding=True, return_special_tokens_mask=True, return_tensors="pt")
        model_inputs = {k: v.to(self.device) for k, v in enc.items() if k in self.tokenizer.model_input_names}
        out = self.model(**model_inputs, output_attentions=True)
        avg = head_average(out.attentions, self.path)
        results = []
        for b in range(len(texts)):
            keep = enc["attention_mask"][b].bool()
            idx = keep.nonzero().squeeze(1).to(self.device)
            layers = avg[b].index_select(1, idx).index_select(2, idx)
            special = enc["special_tokens_mask"][b][keep].bool()
            results.append((layers.cpu().numpy(), special.numpy()))
        return results

    def _images(self, images: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        pixels = self.processor(images=list(images), return_tensors="pt")["pixel_values"].to(self.device)
        out = self.model(pixel_values=pixels, output_attentions=True)
        avg = head_average(out.attentions, self.path)
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
        return [(avg[b], special.copy()) for b in range(len(images))]
