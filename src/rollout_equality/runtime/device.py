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

import logging
import os
import re
import shutil
import subprocess
from typing import Any

log = logging.getLogger(__name__)

NVIDIA_PROC = "/proc/driver/nvidia/version"
DRIVER_FOR_CUDA = {13: 580, 12: 525, 11: 450}
"""The oldest Linux driver branch that runs a CUDA major version's builds (NVIDIA's CUDA Toolkit release notes, "CUDA
Toolkit and Corresponding Driver Versions", minor-version compatibility: 13.x ≥ 580, 12.x ≥ 525.60.13, 11.x ≥
450.80.02). The lock's torch is PyPI's CUDA 13 build."""
FIX = (
    "install the torch and torchvision built for your driver's CUDA over the lock (docs/gpu.md, Older drivers), "
    "or set the device to cpu"
)


def nvidia_driver() -> str | None:
    """The NVIDIA driver's version on this host: the kernel module's (``/proc/driver/nvidia/version``), else
    ``nvidia-smi``'s; None where there is no NVIDIA driver. Reads no GPU through torch."""
    try:
        with open(NVIDIA_PROC) as fh:
            found = re.search(r"Kernel Module(?: for \w+)?\s+(\d+(?:\.\d+)+)", fh.read())
        if found:
            return found.group(1)
    except OSError:
        pass
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None
    try:
        out = subprocess.run(
            [smi, "--query-gpu=driver_version", "--format=csv,noheader"], capture_output=True, text=True, timeout=30
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    versions = out.stdout.split()
    return versions[0] if out.returncode == 0 and versions else None


def cuda_probe() -> dict[str, Any]:
    """What decides whether torch computes on a GPU here: the NVIDIA driver (:func:`nvidia_driver`), torch's version
    and the CUDA it was built for (None: a CPU-only build), the GPUs torch sees, and ``CUDA_VISIBLE_DEVICES``."""
    import torch

    return {
        "driver": nvidia_driver(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "gpus": torch.cuda.device_count() if torch.cuda.is_available() else 0,
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
    }


def unused_gpu(probe: dict[str, Any]) -> str | None:
    """Why a host with an NVIDIA driver computes on the CPU (torch sees no GPU there), naming the driver, torch's CUDA
    build and the fix; None where torch sees a GPU or there is no driver."""
    if probe["gpus"] or not probe["driver"]:
        return None
    build = probe["torch_cuda"]
    if build is None:
        why = f"torch {probe['torch']} is a CPU-only build"
    else:
        major, branch = int(build.split(".")[0]), int(probe["driver"].split(".")[0])
        needed = DRIVER_FOR_CUDA.get(major)
        if needed is not None and branch < needed:
            why = f"torch {probe['torch']} is built for CUDA {build}, which needs driver {needed} or newer"
        elif probe["cuda_visible_devices"] is not None and not probe["cuda_visible_devices"].strip(" ,"):
            why = "CUDA_VISIBLE_DEVICES is empty and hides every GPU"
        else:
            why = f"torch {probe['torch']} (CUDA {build}) finds no usable GPU (CUDA_VISIBLE_DEVICES, the device files)"
    return f"NVIDIA driver {probe['driver']} is installed but torch sees no CUDA GPU: {why}; {FIX}"


def torch_cuda_build() -> str | None:
    """The CUDA version torch was built for, read from its ``version.py`` without importing torch (the workflow plans
    its jobs without it); None for a CPU-only build or where torch is not installed."""
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    try:
        text = open(os.path.join(spec.submodule_search_locations[0], "version.py")).read()
    except OSError:
        return None
    found = re.search(r"^cuda\s*(?::[^=]+)?=\s*['\"]([^'\"]+)['\"]", text, flags=re.M)
    return found.group(1) if found else None


def local_gpu_problem(asked: list[str]) -> str | None:
    """Why this host cannot run the jobs of a local run whose settings ``asked`` (e.g. ``["extraction.device:
    cuda"]``) ask for a CUDA GPU, before any job starts: no NVIDIA driver, a CPU-only torch, or a driver too old for
    torch's CUDA build (:data:`DRIVER_FOR_CUDA`); None when none of these holds (the job itself then checks that torch
    sees the GPU). Imports no torch."""
    if not asked:
        return None
    what = " and ".join(asked)
    driver, build = nvidia_driver(), torch_cuda_build()
    if driver is None:
        return (
            f"{what} ask for a CUDA GPU, but this host has no NVIDIA driver (no {NVIDIA_PROC}, no nvidia-smi), and the "
            "jobs of a local run run here: set the device to cpu or auto (without the overlay overlays/gpu.yaml), or "
            "run on a host with a GPU or on a cluster (docs/cluster.md)"
        )
    if build is None:
        return f"{what} ask for a CUDA GPU, but the installed torch is a CPU-only build (driver {driver}); {FIX}"
    needed = DRIVER_FOR_CUDA.get(int(build.split(".")[0]))
    if needed is not None and int(driver.split(".")[0]) < needed:
        return (
            f"{what} ask for a CUDA GPU, but NVIDIA driver {driver} cannot run torch's CUDA {build} build (it needs "
            f"driver {needed} or newer); {FIX}"
        )
    return None


def resolve_device(device: str) -> str:
    """``auto`` → ``cuda`` when torch sees a CUDA GPU, else ``cpu`` (with a warning, :func:`unused_gpu`, where an
    NVIDIA driver is installed: never silently on the CPU); ``cpu`` and ``cuda[:N]`` as given (``cuda`` with no usable
    GPU raises, naming the driver, torch's CUDA build and the fix, before any model is loaded)."""
    import torch

    if device != "cpu" and device != "auto" and not re.fullmatch(r"cuda(:\d+)?", device):
        raise ValueError(f"device must be auto, cpu or cuda[:N]; got {device!r}")
    if device == "cpu" or torch.cuda.is_available():
        if device.startswith("cuda:") and int(device.split(":")[1]) >= torch.cuda.device_count():
            raise RuntimeError(
                f"device {device!r} was asked for, but torch sees {torch.cuda.device_count()} CUDA GPU(s)"
            )
        return "cuda" if device == "auto" else device
    probe = cuda_probe()
    why = unused_gpu(probe)
    if device == "auto":
        if why:
            log.warning("device auto: measuring on the CPU. %s", why)
        return "cpu"
    raise RuntimeError(
        f"device {device!r} was asked for, but torch sees no CUDA GPU: "
        + (why or f"no NVIDIA driver on this host (torch {probe['torch']}, CUDA build {probe['torch_cuda']})")
        + "; on a host without a GPU use device: cpu or auto (and not the overlay overlays/gpu.yaml)"
    )


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
