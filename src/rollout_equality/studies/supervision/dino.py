"""DINO's self-distillation (Caron et al. 2021), the core of DINOv2's objective, for the study's small ViT.

A student (the ViT and a projection :class:`Head`) sees two augmented views of each digit; a teacher, an exponential
moving average of the student (:func:`ema_update`), sees the same views. The loss (:func:`dino_loss`) is the
cross-entropy between the teacher's centred, sharpened distribution over prototypes of one view and the student's of
the other view; the centre (:func:`update_center`) is a moving average of the teacher's outputs, which keeps one
prototype from taking every input (collapse), and the low teacher temperature keeps the outputs from going uniform.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn


class Head(nn.Module):
    """DINO's projection head: an MLP (``width`` → ``hidden`` → ``hidden`` → ``bottleneck``, GELU), the bottleneck
    L2-normalised, then cosine similarities to ``out_dim`` prototypes (the last layer weight-normalised with its norm
    fixed at one, as DINO's ``norm_last_layer``); ``batch_norm``: batch normalisation after each hidden layer (DINO's
    ``use_bn_in_head``)."""

    def __init__(self, width: int, hidden: int, bottleneck: int, out_dim: int, batch_norm: bool = False):
        super().__init__()
        norm = nn.BatchNorm1d if batch_norm else nn.Identity
        self.mlp = nn.Sequential(
            nn.Linear(width, hidden),
            norm(hidden),
            nn.GELU(),
            nn.Linear(hidden, hidden),
            norm(hidden),
            nn.GELU(),
            nn.Linear(hidden, bottleneck),
        )
        self.prototypes = nn.Parameter(torch.empty(out_dim, bottleneck))
        for module in self.mlp:  # DINO's initialisation: truncated normal weights (std 0.02), zero biases
            if isinstance(module, nn.Linear):
                nn.init.trunc_normal_(module.weight, std=0.02)
                nn.init.zeros_(module.bias)
        nn.init.trunc_normal_(self.prototypes, std=0.02)

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        z = F.normalize(self.mlp(features), dim=-1)
        return z @ F.normalize(self.prototypes, dim=-1).T


def dino_loss(
    student: torch.Tensor, teacher: torch.Tensor, center: torch.Tensor, student_temp: float, teacher_temp: float
) -> torch.Tensor:
    """The mean over every (teacher view i, student view j ≠ i) and every image of
    ``-Σ_k softmax((teacher_i − center) / teacher_temp)_k · log softmax(student_j / student_temp)_k``.

    ``student``: (V, B, K) outputs of V views; ``teacher``: (T, B, K) outputs of the first T ≤ V views (the teacher
    sees the global views only); ``center``: (K,). The teacher's side carries no gradient."""
    if teacher.shape[0] > student.shape[0] or teacher.shape[1:] != student.shape[1:]:
        raise ValueError(f"teacher outputs {tuple(teacher.shape)} do not match student outputs {tuple(student.shape)}")
    targets = F.softmax((teacher.detach() - center) / teacher_temp, dim=-1)
    log_probs = F.log_softmax(student / student_temp, dim=-1)
    terms = [
        -(targets[i] * log_probs[j]).sum(dim=-1).mean()
        for i in range(teacher.shape[0])
        for j in range(student.shape[0])
        if i != j
    ]
    if not terms:
        raise ValueError("DINO needs two views or more: a teacher view and another student view")
    return torch.stack(terms).mean()


@torch.no_grad()
def update_center(center: torch.Tensor, teacher: torch.Tensor, momentum: float) -> torch.Tensor:
    """The new centre: ``momentum · center + (1 − momentum) · mean`` of the teacher's outputs (T, B, K) over views
    and images."""
    return momentum * center + (1 - momentum) * teacher.reshape(-1, teacher.shape[-1]).mean(dim=0)


@torch.no_grad()
def ema_update(teacher: nn.Module, student: nn.Module, momentum: float) -> None:
    """The teacher's parameters moved towards the student's: ``θ_t ← momentum · θ_t + (1 − momentum) · θ_s``
    (buffers copied)."""
    for t, s in zip(teacher.parameters(), student.parameters(), strict=True):
        t.mul_(momentum).add_(s.detach(), alpha=1 - momentum)
    for t, s in zip(teacher.buffers(), student.buffers(), strict=True):
        t.copy_(s)


def teacher_momentum(step: int, total: int, start: float) -> float:
    """DINO's schedule of the teacher's momentum: from ``start`` at step 0 to 1 at the last step, on a cosine."""
    import math

    return 1 - (1 - start) * (math.cos(math.pi * step / max(total - 1, 1)) + 1) / 2
