"""The augmentations of both objectives: a random affine map of each digit (rotation, scale, translation).

Drawn from a ``torch.Generator``, so that a seed gives the same views on one machine; supervised training takes one
view of each digit, DINO two (:mod:`rollout_equality.studies.supervision.dino`), from the same distribution.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F


def augment(pixels: torch.Tensor, spec: dict[str, Any], generator: torch.Generator, background: float) -> torch.Tensor:
    """One random view of each image of ``pixels`` (N, C, H, W): rotated by up to ``spec["rotation"]`` degrees, scaled
    by a factor in ``spec["scale"]`` ([low, high]), shifted by up to ``spec["translate"]`` pixels each way; what comes
    in from outside the image is ``background`` (the normalised value of a blank pixel)."""
    n, _, height, width = pixels.shape

    def uniform(low: float, high: float) -> torch.Tensor:
        return low + (high - low) * torch.rand(n, generator=generator)

    angle = uniform(-spec["rotation"], spec["rotation"]) * math.pi / 180
    scale = uniform(*spec["scale"])
    shift_x = uniform(-spec["translate"], spec["translate"]) * 2 / width
    shift_y = uniform(-spec["translate"], spec["translate"]) * 2 / height
    cos, sin = torch.cos(angle) / scale, torch.sin(angle) / scale
    theta = torch.stack(
        [torch.stack([cos, -sin, shift_x], dim=1), torch.stack([sin, cos, shift_y], dim=1)], dim=1
    )  # (N, 2, 3): output coordinates → input coordinates
    grid = F.affine_grid(theta, list(pixels.shape), align_corners=False)
    moved = F.grid_sample(pixels - background, grid, mode="bilinear", padding_mode="zeros", align_corners=False)
    return moved + background
