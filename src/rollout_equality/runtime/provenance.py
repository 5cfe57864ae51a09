"""What decides a result's bits, written down with every records file and every trained FT-Transformer.

* the device, and on a CUDA device TF32 and deterministic algorithms (:mod:`rollout_equality.runtime.device`); on
  the CPU of a host with an NVIDIA driver, why its GPU was not used (``gpu_unused``);
* on a CPU, torch's thread count for the forward pass or training (:mod:`rollout_equality.runtime.threads`);
* on a CPU, the code path each library runs (:mod:`rollout_equality.runtime.code_paths`);
* the library versions (:data:`VERSIONED`).

:func:`provenance` records all of these.
"""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata as importlib_metadata
from typing import Any

from rollout_equality.runtime.code_paths import VARIABLES as CODE_PATH_VARIABLES
from rollout_equality.runtime.device import cuda_probe, tf32_settings, unused_gpu

VERSIONED = (
    "rollout-equality",
    "numpy",
    "scipy",
    "pandas",
    "scikit-learn",
    "pyarrow",
    "numba",
    "llvmlite",
    "torch",
    "torchvision",
    "transformers",
    "tokenizers",
    "safetensors",
    "timm",
    "pillow",
    "onnx",
    "rtdl-revisiting-models",
)
"""The distributions whose version is recorded with a result: those whose code makes a number (the analysis and its
compiler, the forward pass, tokenising and decoding the inputs, reading the weights, preparing and splitting the
tables, storing the records)."""


def versions() -> dict[str, str]:
    """Python's version and those of :data:`VERSIONED` (the installed ones)."""
    out = {"python": platform.python_version()}
    for dist in VERSIONED:
        try:
            out[dist] = importlib_metadata.version(dist)
        except importlib_metadata.PackageNotFoundError:
            pass
    return out


def numba_target() -> str:
    """The CPU numba compiles the analysis for, as numba read it when it started: a code path's ``NUMBA_CPU_NAME``
    (e.g. ``generic``), or ``host`` (this processor). Imports numba."""
    import numba

    return numba.config.CPU_NAME or "host"


def cpu_model() -> str:
    """The processor as ``/proc/cpuinfo`` names it, with its family and model numbers and its widest vector extension
    (a virtual machine may name only the brand: ``AMD EPYC (family 23, model 49; AVX2)``), or the platform's
    description where there is no ``/proc/cpuinfo``."""
    try:
        with open("/proc/cpuinfo") as info:
            fields = dict(line.split(":", 1) for line in info.read().split("\n\n")[0].splitlines() if ":" in line)
    except OSError:
        return platform.processor() or platform.machine()
    fields = {key.strip(): value.strip() for key, value in fields.items()}
    flags = fields.get("flags", "").split()
    width = "AVX-512" if "avx512f" in flags else "AVX2" if "avx2" in flags else "SSE"
    name = fields.get("model name") or platform.processor() or platform.machine()
    return f"{name} (family {fields.get('cpu family', '?')}, model {fields.get('model', '?')}; {width})"


def provenance(device: str, *, threads: int, analysis_threads: int | None = None) -> dict[str, Any]:
    """What decides the bits of a result computed here: the device (and the GPU, CUDA and cuDNN on one, with the
    TF32 settings), torch's threads for the forward pass or training (``threads``), the analysis's workers, the CPU
    code paths (torch's capability, and every code-path variable that was set), and :func:`versions`."""
    import torch

    out: dict[str, Any] = {"device": device, "torch_threads": threads}
    if analysis_threads is not None:
        out["analysis_threads"] = analysis_threads
    if device.startswith("cuda"):
        out["gpu"] = torch.cuda.get_device_name(torch.device(device))
        out["cuda"] = torch.version.cuda
        out["cudnn"] = torch.backends.cudnn.version()
        out["float32"] = tf32_settings()
        out["deterministic_algorithms"] = torch.are_deterministic_algorithms_enabled()
    else:
        why = unused_gpu(cuda_probe())
        if why:  # a host with an NVIDIA driver whose GPU this CPU result did not use, and why
            out["gpu_unused"] = why
    out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    if "numba" in sys.modules:  # the analysis's compiler, as it read its target when it started
        out["numba_target"] = numba_target()
    out["code_path"] = {name: os.environ[name] for name in CODE_PATH_VARIABLES if name in os.environ}
    out["versions"] = versions()
    return out
