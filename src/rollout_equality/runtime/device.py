"""Where and how the numbers are computed: the device, torch's threads, float32 without shortcuts, and what decides
a result's bits (recorded with every records file and every trained FT-Transformer).

One place resolves the device (:func:`resolve_device`), in the job, on the host that runs it. The workflow's rules
claim a GPU from the setting alone (:func:`gpu_claim`), never from the hardware of the host that plans the jobs (a
cluster's login node rarely has the GPU of the node that runs them).

What the bits depend on, and what is fixed here:

* the device: a GPU computes the forward pass with other kernels than a CPU (records then differ in the last bits of
  the attention; benchmarks/gpu_check.py measures by how much and whether ``holds`` moves);
* on a CUDA device, TF32: cuBLAS and cuDNN may round float32 products to a 10-bit mantissa (on by default for cuDNN's
  convolutions on Ampere and later): :func:`exact_float32` turns it off, so "float32" means float32;
* on a CUDA device, nondeterministic algorithms (atomics in backward passes): :func:`deterministic_cuda` asks torch
  for deterministic ones, for training;
* on a CPU, torch's thread count (a reduction split over more threads adds in another order): the forward pass and
  FT-Transformer's training run on a count that the config fixes (``extraction.threads``,
  ``tabular.training.threads``), not on the job's cores;
* on a CPU, the code path each library picks for the processor: torch's ATen kernels (vector width), MKL's BLAS
  (``MKL_CBWR``), oneDNN's JIT (``ONEDNN_MAX_CPU_ISA``), numba's kernels (``NUMBA_CPU_NAME``): see :mod:`job`;
* the library versions.

:func:`provenance` writes all of these down.
"""

from __future__ import annotations

import os
import platform
import re
import sys
from importlib import metadata as importlib_metadata
from typing import Any

CODE_PATH_VARIABLES = ("ATEN_CPU_CAPABILITY", "MKL_CBWR", "ONEDNN_MAX_CPU_ISA", "NUMBA_CPU_NAME")
"""Environment variables that choose a library's CPU code path; read once, when the library starts."""

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
    out["cpu_capability"] = torch.backends.cpu.get_cpu_capability()
    if "numba" in sys.modules:  # the analysis's compiler, as it read its target when it started
        out["numba_target"] = numba_target()
    out["code_path"] = {name: os.environ[name] for name in CODE_PATH_VARIABLES if name in os.environ}
    out["versions"] = versions()
    return out
