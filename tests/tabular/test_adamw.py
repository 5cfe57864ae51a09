"""The compatible code path's optimiser: torch's AdamW update, and the same bits whatever kernels torch runs."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from conftest import REPO

from rollout_equality.tabular.adamw import PortableAdamW, for_code_path
from rollout_equality.tabular.ftt import make_optimizer

CAPABILITIES = ("default", "avx2", "avx512")
"""ATen's CPU capabilities, narrowest first (``ATEN_CPU_CAPABILITY``)."""

WORKER = """
import json, sys
import numpy as np, torch
from rollout_equality.runtime import digests
from rollout_equality.tabular.adamw import PortableAdamW, for_code_path

kind, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
rng = np.random.default_rng(0)  # numpy draws the weights and gradients: torch.randn's bits depend on the kernels
shapes = ((257, 192), (192,), (3, 64, 64))
params = [torch.nn.Parameter(torch.from_numpy(rng.standard_normal(shape, dtype=np.float32))) for shape in shapes]
groups = [{"params": params[:2]}, {"params": params[2:], "weight_decay": 0.0}]
make = torch.optim.AdamW if kind == "torch" else PortableAdamW
optimizer = make(groups, lr=1e-4, weight_decay=1e-5)
for _ in range(5):
    for p in params:
        p.grad = torch.from_numpy(rng.standard_normal(p.shape, dtype=np.float32) * 1e-2)
    optimizer.step()
weights = torch.cat([p.detach().reshape(-1) for p in params]).numpy()
print(json.dumps({"capability": torch.backends.cpu.get_cpu_capability(), "weights": digests.of_bytes(weights.tobytes())}))
"""


def supported() -> tuple[str, ...]:
    """The capabilities this processor runs: up to torch's native one."""
    native = torch.backends.cpu.get_cpu_capability().lower()
    return CAPABILITIES[: CAPABILITIES.index(native) + 1] if native in CAPABILITIES else ("default",)


def run(kind: str, capability: str, threads: int) -> dict:
    env = {**os.environ, "ATEN_CPU_CAPABILITY": capability, "PYTHONPATH": str(REPO / "src")}
    done = subprocess.run(
        [sys.executable, "-c", WORKER, kind, str(threads)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_the_portable_update_is_torchs_adamw_to_float32_rounding():
    torch.manual_seed(1)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.LayerNorm(32), torch.nn.Linear(32, 2))
    twin = [p.detach().clone().requires_grad_() for p in model.parameters()]
    params = list(model.parameters())
    groups = lambda ps: [{"params": ps[:2]}, {"params": ps[2:], "weight_decay": 0.0}]  # noqa: E731
    ours = PortableAdamW(groups(params), lr=1e-2, weight_decay=1e-1)
    theirs = torch.optim.AdamW(groups(twin), lr=1e-2, weight_decay=1e-1)
    rng = np.random.default_rng(1)
    for _ in range(20):
        for p, q in zip(params, twin):
            p.grad = torch.from_numpy(rng.standard_normal(p.shape, dtype=np.float32))
            q.grad = p.grad.clone()
        ours.step()
        theirs.step()
    for p, q in zip(params, twin):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=2e-6)


def test_the_portable_update_gives_the_same_bits_on_every_capability_and_thread_count():
    capabilities = supported()
    if len(capabilities) < 2:
        pytest.skip(f"torch runs only {capabilities} here: nothing to force")
    runs = {(c, t): run("portable", c, t) for c in capabilities for t in (1, 2)}
    for (capability, _), found in runs.items():
        assert found["capability"].lower() == capability  # the kernels were really forced
    assert len({found["weights"] for found in runs.values()}) == 1, runs


def test_the_compatible_code_path_chooses_the_portable_update_on_the_cpu_only():
    model = torch.nn.Linear(4, 2)
    model.make_default_optimizer = lambda: torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=1e-5)
    portable = make_optimizer(model, "compatible", "cpu")
    assert isinstance(portable, PortableAdamW)
    assert portable.param_groups[0]["lr"] == 1e-4 and portable.param_groups[0]["weight_decay"] == 1e-5
    assert type(make_optimizer(model, "native", "cpu")) is torch.optim.AdamW
    assert type(make_optimizer(model, "compatible", "cuda")) is torch.optim.AdamW
    with pytest.raises(ValueError, match="code_path must be one of"):
        make_optimizer(model, "fast", "cpu")
    with pytest.raises(TypeError, match="AMSGrad"):
        PortableAdamW.like(torch.optim.AdamW(model.parameters(), amsgrad=True))


def test_any_adamw_runs_on_its_code_path_with_its_parameters_in_the_models_order():
    """The supervision study's optimiser: one AdamW over a ViT's and a head's parameters, listed in another order."""
    model = torch.nn.ModuleDict({"vit": torch.nn.Linear(4, 3), "head": torch.nn.Sequential(torch.nn.Linear(3, 2))})
    order = [name for name, _ in model.named_parameters()]
    shuffled = list(reversed(list(model.parameters())))
    for path, kind in (("native", torch.optim.AdamW), ("compatible", PortableAdamW)):
        optimizer = for_code_path(torch.optim.AdamW(shuffled, lr=1e-3, weight_decay=0.05), model, path)
        assert type(optimizer) is kind and optimizer.param_groups[0]["weight_decay"] == 0.05
        names = {p: n for n, p in model.named_parameters()}
        assert [names[p] for p in optimizer.param_groups[0]["params"]] == order
    with pytest.raises(ValueError, match="does not hold"):
        for_code_path(torch.optim.AdamW([torch.nn.Parameter(torch.zeros(2))]), model, "compatible")
