"""The study's one architecture: a small timm ``VisionTransformer`` on 28 × 28 digits, drawn from a seed.

``supervision.vit`` in config.yaml names a timm architecture and its arguments (patch 7 → 16 patches and CLS, depth,
width, heads). :func:`build` draws its weights from a seed as the ``random_init`` models do
(:func:`rollout_equality.acquire.models.load_timm_model`), so that one seed gives one initialisation for every
objective, and sets its preprocessing to what the digits need: no crop, the image as it is, normalised to [-1, 1].
"""

from __future__ import annotations

from typing import Any

import torch

PREPROCESSING = {"crop_pct": 1.0, "mean": (0.5, 0.5, 0.5), "std": (0.5, 0.5, 0.5)}
"""The pretrained configuration set on the model (timm's evaluation transform reads it): a 28 × 28 digit is neither
resized nor cropped, its pixels mapped from [0, 1] to [-1, 1]."""


def build(vit: dict[str, Any], seed: int) -> torch.nn.Module:
    """The architecture of ``vit`` (``timm_name``, ``kwargs``) with weights drawn from ``torch.manual_seed(seed)``."""
    import timm

    img_size = vit["kwargs"].get("img_size")
    size = tuple(img_size) if isinstance(img_size, (list, tuple)) else (img_size, img_size)
    torch.manual_seed(int(seed))
    return timm.create_model(
        vit["timm_name"],
        pretrained=False,
        pretrained_cfg_overlay={**PREPROCESSING, "input_size": (3, *size)},
        **vit["kwargs"],
    )


def cls_features(model: torch.nn.Module, pixels: torch.Tensor, batch_size: int = 500) -> torch.Tensor:
    """The CLS token after the final norm (timm's pre-logits), (N, width), of a batch of images (N, 3, H, W), in
    evaluation mode and without gradients."""
    was_training = model.training
    model.eval()
    out = []
    with torch.inference_mode():
        for start in range(0, len(pixels), batch_size):
            tokens = model.forward_features(pixels[start : start + batch_size])
            out.append(model.forward_head(tokens, pre_logits=True))
    model.train(was_training)
    return torch.cat(out)
