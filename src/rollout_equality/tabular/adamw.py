"""AdamW whose update gives the same bits on every x86-64 processor: the compatible code path's optimiser.

On the compatible code path (:mod:`rollout_equality.runtime.code_paths`) FT-Transformer's first forward and
backward pass gave the same bits on an Intel Xeon (AVX-512, AMX) and an AMD EPYC Zen 2; the two parted first at
the weights after step 1, the optimiser's update (docs/outputs.md#reproducibility). torch's AdamW runs its update
through kernels chosen for the processor (single-tensor, foreach or fused, each vectorised at ATen's capability),
and a vectorised kernel may fuse a multiply and an add that another rounds twice.

:class:`PortableAdamW` computes the same update as ``torch.optim.AdamW`` (decoupled weight decay, no AMSGrad),
with every operation an IEEE 754 basic operation (add, multiply, divide, square root), each rounded once, in
float64 on numpy arrays, in a fixed order, and the new weights rounded once to float32. IEEE 754 defines the result
of each of those operations exactly, whatever the vector width that computes it, so the update depends only on its
inputs. The powers β₁ᵗ and β₂ᵗ are running products, not calls to ``pow``. It runs on the CPU only; its cost is
measured in ``benchmarks/adamw_cost.py``.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from rollout_equality.config.schema import choices

HYPERPARAMETERS = ("lr", "betas", "eps", "weight_decay")
"""The keys of a parameter group that the update reads (``torch.optim.AdamW``'s names)."""


def in_model_order(optimizer: torch.optim.Optimizer, model: torch.nn.Module) -> torch.optim.Optimizer:
    """``optimizer`` with each parameter group's parameters in ``model.named_parameters()`` order (in place, before
    the first step); returns it.

    rtdl's ``make_parameter_groups`` builds the no-decay group from a Python ``set`` of parameters, whose order
    follows the objects' addresses and so changes from process to process. The group order decides the order of
    the optimiser's state (and of a saved optimiser), of each update's temporaries, and of the fingerprint's rows;
    in the model's order it is the same in every process. Raises ValueError for a parameter the model does not
    hold, or an optimiser that has already stepped."""
    if optimizer.state:
        raise ValueError("in_model_order reorders an optimiser before its first step; this one has stepped")
    position = {p: i for i, (_, p) in enumerate(model.named_parameters())}
    for group in optimizer.param_groups:
        foreign = [tuple(p.shape) for p in group["params"] if p not in position]
        if foreign:
            raise ValueError(f"the optimiser holds parameters of shapes {foreign} that the model does not hold")
        group["params"].sort(key=position.__getitem__)
    return optimizer


def for_code_path(
    optimizer: torch.optim.Optimizer, model: torch.nn.Module, code_path: str, device: str = "cpu"
) -> torch.optim.Optimizer:
    """The optimiser a training runs on ``code_path`` (:mod:`rollout_equality.runtime.code_paths`): ``optimizer`` (a
    ``torch.optim.AdamW``, as the recipe makes it) with each group's parameters in ``model``'s order
    (:func:`in_model_order`); on the compatible code path on the CPU, its update in IEEE basic operations
    (:meth:`PortableAdamW.like`), whose bits do not depend on the processor. FT-Transformer's recipe and the
    supervision study's make their AdamW, and this chooses how it runs. Raises ValueError for an unknown code path."""
    if code_path not in choices("$defs", "code_path"):
        raise ValueError(f"code_path must be one of {choices('$defs', 'code_path')}; got {code_path!r}")
    optimizer = in_model_order(optimizer, model)
    if code_path == "compatible" and device == "cpu":
        return PortableAdamW.like(optimizer)
    return optimizer


class PortableAdamW(torch.optim.Optimizer):
    """``torch.optim.AdamW``'s update in IEEE basic operations (see the module); the moments are kept in float64."""

    def __init__(self, params, lr: float = 1e-3, betas=(0.9, 0.999), eps: float = 1e-8, weight_decay: float = 1e-2):
        super().__init__(params, {"lr": lr, "betas": tuple(betas), "eps": eps, "weight_decay": weight_decay})

    @classmethod
    def like(cls, optimizer: torch.optim.Optimizer) -> PortableAdamW:
        """The portable update of ``optimizer`` (a ``torch.optim.AdamW``): its parameter groups and their
        hyperparameters, so that the recipe's optimiser is stated once (where ``optimizer`` was made)."""
        if not isinstance(optimizer, torch.optim.AdamW) or any(g.get("amsgrad") for g in optimizer.param_groups):
            raise TypeError(f"PortableAdamW replaces torch.optim.AdamW without AMSGrad, not {optimizer!r}")
        return cls([{"params": g["params"], **{k: g[k] for k in HYPERPARAMETERS}} for g in optimizer.param_groups])

    @torch.no_grad()
    def step(self, closure=None):
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        for group in self.param_groups:
            lr, (beta1, beta2), eps, decay = (group[k] for k in HYPERPARAMETERS)
            for p in group["params"]:
                if p.grad is None:
                    continue
                if p.device.type != "cpu" or p.dtype != torch.float32:
                    raise ValueError(
                        f"PortableAdamW updates float32 parameters on the CPU; got {p.dtype} on {p.device} "
                        "(on a GPU the compatible code path does not apply: use tabular.training.code_path native)"
                    )
                state = self.state[p]
                if not state:
                    state["step"] = 0
                    state["beta1_power"] = 1.0
                    state["beta2_power"] = 1.0
                    state["exp_avg"] = torch.zeros(p.shape, dtype=torch.float64)
                    state["exp_avg_sq"] = torch.zeros(p.shape, dtype=torch.float64)
                state["step"] += 1
                state["beta1_power"] *= beta1
                state["beta2_power"] *= beta2
                update(p.data.numpy(), p.grad.numpy(), state, lr, (beta1, beta2), eps, decay)
        return loss


def update(weights, grad, state, lr, betas, eps, decay, trace=None) -> None:
    """One step of :class:`PortableAdamW` on float32 ``weights`` (written in place) from float32 ``grad``, with
    ``state``'s float64 moments and running powers (already advanced to this step); ``trace``, a list, receives
    (name, array) for each stage, in order (the fingerprint digests them)."""
    beta1, beta2 = betas
    note = (lambda name, array: trace.append((name, array.copy()))) if trace is not None else (lambda *_: None)
    m, v = state["exp_avg"].numpy(), state["exp_avg_sq"].numpy()
    g = grad.astype(np.float64)
    w = weights.astype(np.float64)
    w *= 1.0 - lr * decay  # decoupled weight decay, before the step, as torch's AdamW
    note("decayed weights", w)
    m += (1.0 - beta1) * (g - m)  # torch's lerp
    note("exp_avg", m)
    v *= beta2
    v += (1.0 - beta2) * (g * g)
    note("exp_avg_sq", v)
    denom = np.sqrt(v)
    denom /= math.sqrt(1.0 - state["beta2_power"])
    denom += eps
    note("denominator", denom)
    step = m / denom
    step *= lr / (1.0 - state["beta1_power"])
    note("step", step)
    w -= step
    weights[...] = w.astype(np.float32)
    note("weights", weights)
