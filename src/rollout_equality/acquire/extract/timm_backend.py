"""Attention from timm vision transformers, captured at the softmax with fused attention off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rollout_equality.acquire.extract import NoAttentionError, square_attention
from rollout_equality.condition.attention import Attention, head_mean
from rollout_equality.runtime.device import exact_float32


def save_timm(model: torch.nn.Module, architecture: str, out_dir: str | Path, model_args: dict | None = None) -> None:
    """Save a timm model in the hub layout, with timm's own exporter: ``config.json`` + ``model.safetensors``.

    ``config.json`` holds the architecture, the arguments the model was built with
    (``model_args``) and its pretrained configuration (preprocessing), as on the hub.
    """
    from safetensors.torch import save_file
    from timm.models._hub import save_config_for_hf

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    save_config_for_hf(model, str(out_dir / "config.json"), model_args=dict(model_args or {}))
    cfg = json.loads((out_dir / "config.json").read_text())
    if cfg.get("architecture") != architecture:
        raise ValueError(f"timm exported architecture {cfg.get('architecture')!r} for {architecture!r}")
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))


def load_timm(path: str | Path) -> torch.nn.Module:
    """Load a timm model from a directory in the hub layout (a hub snapshot or :func:`save_timm`).

    timm's own ``local-dir:`` source reads ``config.json`` (architecture, model arguments,
    pretrained configuration) and the weights (``model.safetensors`` or ``pytorch_model.bin``),
    exactly as it would from the hub, without reaching for the network.
    """
    import timm

    path = Path(path)
    if not (path / "config.json").is_file():
        raise FileNotFoundError(
            f"{path / 'config.json'} is missing; a timm model directory needs config.json and weights"
        )
    if not any((path / f).is_file() for f in ("model.safetensors", "pytorch_model.bin")):
        raise FileNotFoundError(f"{path} holds no model.safetensors or pytorch_model.bin")
    return timm.create_model(f"local-dir:{path.resolve()}", pretrained=True)


def timm_transform(model: torch.nn.Module):
    """(transform, its configuration): timm's evaluation transform of ``model`` (PIL image → normalised tensor),
    at the image size the model was built for (over its pretrained default). What the extractor feeds the model;
    a model trained here is trained on the same tensors."""
    import timm.data

    config = timm.data.resolve_data_config({}, model=model)
    img_size = getattr(getattr(model, "patch_embed", None), "img_size", None)
    if img_size is not None:  # the size the model was built for wins over its pretrained default
        config["input_size"] = (3, *img_size)
    return timm.data.create_transform(**config), config


class TimmExtractor:
    def __init__(self, path: str, device: str, random_init: dict | None = None):
        """``random_init``: the entry of a random model, its weights drawn from its seed
        (:func:`rollout_equality.acquire.models.load_timm_model`); else the weights in ``path``."""
        from rollout_equality.acquire.models import load_timm_model

        self.path, self.device = path, device
        exact_float32()
        model = load_timm(path) if random_init is None else load_timm_model(random_init)
        self.model = model.float().to(device).eval()
        # The softmax exists only on the unfused path; each block's attention dropout receives the probabilities
        # (identity in eval mode), so a hook on it reads them as the block produces them.
        self.attention_modules = []
        for name, module in self.model.named_modules():
            if hasattr(module, "fused_attn"):
                module.fused_attn = False
                drop = getattr(module, "attn_drop", None)
                if not isinstance(drop, torch.nn.Module):
                    raise NoAttentionError(
                        f"{path}: its attention module {name} ({type(module).__name__}) has no attn_drop to read the "
                        "probabilities at"
                    )
                self.attention_modules.append(drop)
        if not self.attention_modules:
            raise NoAttentionError(
                f"{path}: no timm attention module (with fused_attn) found in {type(model).__name__}"
            )
        self.n_layers = len(self.attention_modules)
        self.n_special = int(getattr(self.model, "num_prefix_tokens", 1))
        self.transform, config = timm_transform(self.model)
        self.preprocessing = {
            "transform": "timm.data.create_transform",
            **{k: (list(v) if isinstance(v, tuple) else v) for k, v in sorted(config.items())},
        }

    @torch.inference_mode()
    def __call__(self, images: list[Any], heads: bool = False) -> list[Attention]:
        """An :class:`~rollout_equality.condition.attention.Attention` per image; with ``heads``, each head's too."""
        pixels = torch.stack([self.transform(im.convert("RGB")) for im in images]).to(self.device)
        layers: list[torch.Tensor] = []
        per_head: list[torch.Tensor] = []

        def capture(module, args, output):
            probs = square_attention(output, len(images), self.path, f"{type(module).__name__} of an attention block")
            layers.append(head_mean(probs))
            if heads:
                per_head.append(probs.float())

        handles = [m.register_forward_hook(capture) for m in self.attention_modules]
        try:
            self.model(pixels)
        finally:
            for handle in handles:
                handle.remove()
        if len(layers) != self.n_layers:
            raise NoAttentionError(f"{self.path}: {len(layers)} attention maps captured for {self.n_layers} blocks")
        avg = torch.stack(layers, dim=1).cpu().numpy()
        if avg.shape[-1] <= self.n_special:
            raise NoAttentionError(f"{self.path}: {avg.shape[-1]} tokens, {self.n_special} of them prefix tokens")
        special = np.zeros(avg.shape[-1], dtype=bool)
        special[: self.n_special] = True  # CLS (and distillation / register) tokens precede the patches
        every = torch.stack(per_head, dim=1).cpu().numpy() if heads else None
        return [Attention(avg[b], special.copy(), every[b] if heads else None) for b in range(len(images))]
