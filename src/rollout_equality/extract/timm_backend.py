"""Attention from timm vision transformers, captured at the softmax with fused attention off."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from rollout_equality.extract import NoAttentionError


def save_timm(model: torch.nn.Module, architecture: str, out_dir: str | Path, model_args: dict | None = None) -> None:
    """Save a timm model as the hub layout: ``config.json`` (architecture, pretrained_cfg) + ``model.safetensors``."""
    from safetensors.torch import save_file

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    cfg = {"architecture": architecture, "num_classes": model.num_classes, "pretrained_cfg": dict(model.pretrained_cfg),
           "model_args": dict(model_args or {})}
    (out_dir / "config.json").write_text(json.dumps(cfg, indent=2, default=str))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(out_dir / "model.safetensors"))


def load_timm(path: str | Path) -> torch.nn.Module:
    """Load a timm model from a directory in the hub layout (a hub snapshot or :func:`save_timm`)."""
    import timm

    path = Path(path)
    cfg = json.loads((path / "config.json").read_text())
    weights = path / "model.safetensors"
    if not weights.exists():
        raise FileNotFoundError(f"{weights} is missing; a timm model directory needs config.json and model.safetensors")
    # The weights come through timm's checkpoint loader; the pretrained config only
    # supplies preprocessing (mean, std, crop), so nothing reaches for the hub.
    overlay = {k: v for k, v in cfg.get("pretrained_cfg", {}).items() if k not in ("hf_hub_id", "file", "url")}
    return timm.create_model(
        cfg["architecture"], pretrained=False, checkpoint_path=str(weights), pretrained_cfg_overlay=overlay,
        num_classes=cfg.get("num_classes", 1000), **cfg.get("model_args", {}),
    )


class TimmExtractor:
    def __init__(self, path: str, device: str):
        import timm
        import timm.data
        from timm.utils import AttentionExtract

        self.path, self.device = path, device
        self.model = load_timm(path).to(device).eval()
        for module in self.model.modules():  # the softmax exists only on the unfused path
            if hasattr(module, "fused_attn"):
                module.fused_attn = False
        self.extract = AttentionExtract(self.model, method="fx")
        self.n_layers = len(self.extract.names) if hasattr(self.extract, "names") else None
        self.n_special = int(getattr(self.model, "num_prefix_tokens", 1))
        config = timm.data.resolve_data_config({}, model=self.model)
        img_size = getattr(getattr(self.model, "patch_embed", None), "img_size", None)
        if img_size is not None:  # the size the model was built for wins over its pretrained default
            config["input_size"] = (3, *img_size)
        self.transform = timm.data.create_transform(**config)

    @torch.inference_mode()
    def __call__(self, images: list[Any]) -> list[tuple[np.ndarray, np.ndarray]]:
        pixels = torch.stack([self.transform(im.convert("RGB")) for im in images]).to(self.device)
        captured = self.extract(pixels)
        if not captured:
            raise NoAttentionError(f"{self.path}: no attention softmax was captured")
        avg = torch.stack([a.float().mean(dim=1) for a in captured.values()], dim=1).cpu().numpy()
        self.n_layers = avg.shape[1]
        special = np.zeros(avg.shape[-1], dtype=bool)
        special[: self.n_special] = True  # CLS (and distillation / register) tokens precede the patches
        return [(avg[b], special.copy()) for b in range(len(images))]
