"""The device a step computes on, and float32 without shortcuts on it.

One place resolves the device (:func:`resolve_device`), in the job, on the host that runs it. The workflow's rules
claim a GPU from the setting alone (:func:`gpu_claim`), never from the hardware of the host that plans the jobs (a
cluster's login node rarely has the GPU of the node that runs them).

A GPU computes the forward pass with other kernels than a CPU (records then differ in the last bits of the attention;
benchmarks/gpu_check.py measures by how much and whether ``holds`` moves). On a CUDA device two more things decide the
bits, and are fixed here: TF32 (cuBLAS and cuDNN may round float32 products to a 10-bit mantissa; :func:`exact_float32`
turns it off, so "float32" means float32) and nondeterministic algorithms (atomics in backward passes;
:func:`deterministic_cuda` asks torch for deterministic ones, for training). What else decides them:
:mod:`rollout_equality.runtime.provenance`.
"""

from __future__ import annotations

import os
import re
from typing import Any


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when torch sees a CUDA GPU, else ``cpu``; ``cpu`` and ``cuda[:N]`` as given (``cuda`` with
    no GPU raises, naming the setting)."""
    import torch

    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise RuntimeError(f"device {device!r} was asked for, but torch sees no CUDA GPU; use device: cpu or auto")
    if device != "cpu" and not device.startswith("cuda"):
        raise ValueError(f"device must be auto, cpu or cuda[:N]; got {device!r}")
    return device


def gpu_claim(device: str) -> int:
    """The GPUs a rule's ``gpu`` resource claims for a job with this device setting, from the setting alone:
    ``cuda[:N]`` claims 1, ``cpu`` none, and ``auto`` ("a GPU if the job's node has one") none: a job with ``auto``
    uses a GPU that its node happens to show it, and asks for none (on a cluster, set ``cuda`` to be given one)."""
    if device == "auto" or device == "cpu":
        return 0
    if re.fullmatch(r"cuda(:\d+)?", device):
        return 1
    raise ValueError(f"device must be auto, cpu or cuda[:N]; got {device!r}")


def exact_float32() -> None:
    """float32 products on CUDA in full float32: TF32 off for cuBLAS matrix products and cuDNN convolutions (and
    'highest' float32 matmul precision on the CPU, torch's default). Called before every forward pass that is
    measured; process-wide."""
    import torch

    torch.set_float32_matmul_precision("highest")
    if _new_tf32_api(torch):  # torch >= 2.9: mixing it with allow_tf32 is an error
        torch.backends.cuda.matmul.fp32_precision = "ieee"
        torch.backends.cudnn.conv.fp32_precision = "ieee"
        torch.backends.cudnn.rnn.fp32_precision = "ieee"
    else:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False


def _new_tf32_api(torch) -> bool:
    return hasattr(torch.backends.cudnn, "conv") and hasattr(torch.backends.cuda.matmul, "fp32_precision")


def tf32_settings() -> dict[str, Any]:
    """The float32 settings of cuBLAS and cuDNN as torch reports them (for the records' provenance)."""
    import torch

    if _new_tf32_api(torch):
        return {
            "cuda.matmul": torch.backends.cuda.matmul.fp32_precision,
            "cudnn.conv": torch.backends.cudnn.conv.fp32_precision,
        }
    return {
        "cuda.matmul.allow_tf32": torch.backends.cuda.matmul.allow_tf32,
        "cudnn.allow_tf32": torch.backends.cudnn.allow_tf32,
    }


def deterministic_cuda() -> None:
    """Deterministic CUDA kernels for training: ``CUBLAS_WORKSPACE_CONFIG`` (which cuBLAS needs for deterministic
    products; set before the first cuBLAS call), torch's deterministic algorithms (an operation without one raises
    instead of running a nondeterministic one), no cuDNN autotuning, and :func:`exact_float32`."""
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    torch.use_deterministic_algorithms(True)
    torch.backends.cudnn.benchmark = False
    torch.backends.cudnn.deterministic = True
    exact_float32()
