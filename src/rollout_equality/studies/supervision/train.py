"""The study's checkpoints: each seed's initialisation, and the same weights trained by each objective.

:func:`write_init` draws a seed's ViT (:func:`rollout_equality.studies.supervision.vit.build`) and saves it as a
timm checkpoint; :func:`train` loads that checkpoint and trains it by one objective, with the budget every objective
shares (``supervision.training``: epochs, batch size, AdamW's learning rate with linear warm-up and cosine decay,
weight decay, gradient clipping, the augmentations of :mod:`.augment`):

* ``supervised``: cross-entropy of the labels through CLS and timm's linear head, one augmented view per digit;
* ``dino``: DINO's self-distillation (:mod:`.dino`), two augmented views per digit seen by student and teacher and
  ``local_views`` zoomed-in views (DINO's local crops) seen by the student only, the teacher (EMA of the student)
  saved, as DINO evaluates it. A DINO step costs more compute than a supervised one (two student views and the
  teacher's forward passes): the budget is equal in epochs, steps and optimiser, not in FLOPs.

Each checkpoint is a folder in the hub layout (``config.json``, ``model.safetensors``; :func:`rollout_equality.acquire
.extract.timm_backend.save_timm`) with ``training.json`` (objective, seed, settings, loss per epoch, test accuracy for
the supervised model, provenance), read by the workflow's ``prepare_model`` like any local timm model. The digits are
the prepared data sets' images, turned into tensors by the extractor's own transform
(:func:`rollout_equality.acquire.extract.timm_backend.timm_transform`), so that the model is trained on the tensors
it is measured on. On one machine and thread count, a seed gives the same weights run to run.
"""

from __future__ import annotations

import contextlib
import copy
import logging
import math
import shutil
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

from rollout_equality.runtime.files import write_json

log = logging.getLogger(__name__)

OBJECTIVES = ("supervised", "dino")
"""The training objectives; the untrained initialisation is the control."""
INFO = "training.json"
"""What a checkpoint folder records besides its weights."""


def load_digits(data_dir: str | Path, model: torch.nn.Module) -> tuple[torch.Tensor, torch.Tensor]:
    """(pixels (N, 3, H, W), labels (N,)) of a prepared digits data set, each image through ``model``'s evaluation
    transform; every image checked against its manifest (:func:`rollout_equality.acquire.data.load_inputs`)."""
    from rollout_equality.acquire.data import load_inputs
    from rollout_equality.acquire.extract.timm_backend import timm_transform

    _, images, manifest = load_inputs(data_dir)
    try:
        labels = torch.tensor([int(item["label"]) for item in manifest["items"]])
    except (KeyError, ValueError) as err:
        raise ValueError(f"{data_dir}: its items are not labelled digits ({err}); prepare a `digits` data set") from err
    transform, _ = timm_transform(model)
    return torch.stack([transform(im) for im in images]), labels


def background(model: torch.nn.Module) -> float:
    """The normalised value of a blank (black) pixel under ``model``'s transform: what augmentation fills in."""
    cfg = model.pretrained_cfg
    return float((0.0 - cfg["mean"][0]) / cfg["std"][0])


def _replace_folder(tmp: Path, out_dir: Path) -> None:
    if out_dir.exists():
        shutil.rmtree(out_dir)
    tmp.rename(out_dir)


def _save(model: torch.nn.Module, vit: dict[str, Any], out_dir: str | Path, info: dict[str, Any]) -> None:
    """The checkpoint folder, written beside ``out_dir`` and renamed onto it (a failure leaves nothing there)."""
    from rollout_equality.acquire.extract.timm_backend import save_timm

    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        save_timm(model, vit["timm_name"], tmp, vit["kwargs"])
        write_json(tmp / INFO, info)
        _replace_folder(tmp, out_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def machine(code_path: str, threads: int) -> dict[str, Any]:
    """What made a checkpoint's bits, for its ``training.json``: the processor (family and model), the code path and
    threads this process runs, and the provenance (:func:`rollout_equality.runtime.provenance.provenance`). The study's
    table of checkpoints keeps each one's SHA-256 beside its processor and code path, so that a machine of another
    family can show whether it trains the same weights."""
    from rollout_equality.runtime.code_paths import active
    from rollout_equality.runtime.provenance import cpu_model, provenance

    if active() != code_path:
        raise RuntimeError(
            f"this process runs code path {active()!r}, not {code_path!r}: call "
            "rollout_equality.runtime.prelude.prelude(threads, code_path) before torch starts"
        )
    return {"cpu": cpu_model(), "code_path": code_path, "provenance": provenance("cpu", threads=threads)}


def write_init(vit: dict[str, Any], seed: int, out_dir: str | Path, threads: int, code_path: str) -> None:
    """Seed ``seed``'s initialisation of the architecture ``vit`` as a checkpoint folder: the control, and where
    every objective starts (drawn on ``code_path``, the study's, as its training runs)."""
    from rollout_equality.studies.supervision.vit import build

    model = build(vit, seed)
    info = {"objective": "none", "seed": seed, "vit": vit, **machine(code_path, threads)}
    _save(model, vit, out_dir, info)
    log.info(
        "initialisation of seed %d: %d parameters, at %s", seed, sum(p.numel() for p in model.parameters()), out_dir
    )


@contextlib.contextmanager
def _without_onednn(code_path: str):
    """On the compatible code path, oneDNN off for the training (a context): the patch embedding's convolution then
    runs as ATen's im2col and an MKL matrix product, under MKL's COMPATIBLE branch like every other product, instead
    of a oneDNN kernel compiled at run time (oneDNN's JIT may choose its blocking by the processor's caches, and
    whether that changes the bits on another family is not known). Elsewhere nothing changes."""
    before = torch.backends.mkldnn.enabled
    torch.backends.mkldnn.enabled = before and code_path != "compatible"
    try:
        yield
    finally:
        torch.backends.mkldnn.enabled = before


def learning_rate(step: int, total: int, warmup: int, lr: float, min_lr: float) -> float:
    """Linear warm-up over ``warmup`` steps to ``lr``, then a cosine down to ``min_lr`` at the last step."""
    if step < warmup:
        return lr * (step + 1) / warmup
    progress = (step - warmup) / max(total - warmup - 1, 1)
    return min_lr + (lr - min_lr) * (1 + math.cos(math.pi * progress)) / 2


def accuracy(model: torch.nn.Module, pixels: torch.Tensor, labels: torch.Tensor, batch_size: int = 500) -> float:
    """The share of ``pixels`` whose logits' argmax is the label (evaluation mode)."""
    model.eval()
    with torch.inference_mode():
        logits = torch.cat([model(pixels[i : i + batch_size]) for i in range(0, len(pixels), batch_size)])
    return float((logits.argmax(dim=1) == labels).double().mean())


def train(
    objective: str,
    init_dir: str | Path,
    train_data: str | Path,
    test_data: str | Path,
    settings: dict[str, Any],
    vit: dict[str, Any],
    seed: int,
    out_dir: str | Path,
    threads: int,
    code_path: str,
) -> dict[str, Any]:
    """Train seed ``seed``'s initialisation (the checkpoint in ``init_dir``) by ``objective`` on the prepared digits
    of ``train_data`` with ``settings`` (config ``supervision.training``) and write the checkpoint to ``out_dir``.
    ``threads`` and ``code_path`` are those this process runs (:func:`rollout_equality.runtime.prelude.prelude`);
    the code path chooses the optimiser (:func:`rollout_equality.tabular.adamw.for_code_path`). The supervised
    model's test accuracy (on ``test_data``) is recorded. Returns what ``training.json`` records."""
    from rollout_equality.acquire.extract.timm_backend import load_timm
    from rollout_equality.runtime.files import progress
    from rollout_equality.runtime.threads import torch_threads
    from rollout_equality.studies.supervision import dino
    from rollout_equality.studies.supervision.augment import augment
    from rollout_equality.tabular.adamw import for_code_path

    if objective not in OBJECTIVES:
        raise ValueError(f"objective must be one of {OBJECTIVES}; got {objective!r}")
    started = time.perf_counter()
    with torch_threads(threads), _without_onednn(code_path):
        model = load_timm(init_dir).float()
        x, y = load_digits(train_data, model)
        blank = background(model)
        generator = torch.Generator().manual_seed(seed)  # batches and views
        torch.manual_seed(seed)  # the DINO head's weights
        aug, d = settings["augment"], settings["dino"]
        local = {**aug, "scale": d["local_scale"], "translate": d["local_translate"]}  # DINO's local crops
        params = list(model.parameters())
        if objective == "dino":
            head = dino.Head(model.num_features, d["hidden"], d["bottleneck"], d["out_dim"], d["batch_norm"])
            student = torch.nn.ModuleDict({"vit": model, "head": head})
            teacher = copy.deepcopy(student).requires_grad_(False)
            center = torch.zeros(d["out_dim"])
            params += list(head.parameters())
        optimiser = for_code_path(  # the groups in the model's order; PortableAdamW on the compatible code path
            torch.optim.AdamW(params, lr=settings["lr"], weight_decay=settings["weight_decay"]),
            student if objective == "dino" else model,
            code_path,
        )
        steps_per_epoch = math.ceil(len(x) / settings["batch_size"])
        total = settings["epochs"] * steps_per_epoch
        warmup = settings["warmup_epochs"] * steps_per_epoch
        losses, step = [], 0
        for epoch in progress(range(settings["epochs"]), desc=f"train {objective} seed {seed}", unit="epoch"):
            model.train()
            order = torch.randperm(len(x), generator=generator)
            total_loss = 0.0
            for start in range(0, len(x), settings["batch_size"]):
                batch = order[start : start + settings["batch_size"]]
                for group in optimiser.param_groups:
                    group["lr"] = learning_rate(step, total, warmup, settings["lr"], settings["min_lr"])
                if objective == "supervised":
                    loss = F.cross_entropy(model(augment(x[batch], aug, generator, blank)), y[batch])
                else:
                    views = [augment(x[batch], aug, generator, blank) for _ in range(d["views"])]
                    views += [augment(x[batch], local, generator, blank) for _ in range(d["local_views"])]
                    flat = torch.cat(views)
                    out_s = student["head"](model.forward_head(model.forward_features(flat), pre_logits=True))
                    with torch.no_grad():  # the teacher sees the global views only
                        t_vit, flat_t = teacher["vit"], flat[: d["views"] * len(batch)]
                        out_t = teacher["head"](t_vit.forward_head(t_vit.forward_features(flat_t), pre_logits=True))
                    out_s = out_s.view(len(views), len(batch), -1)
                    out_t = out_t.view(d["views"], len(batch), -1)
                    loss = dino.dino_loss(out_s, out_t, center, d["student_temp"], d["teacher_temp"])
                optimiser.zero_grad(set_to_none=True)
                loss.backward()
                if objective == "dino" and epoch < d["freeze_prototypes"]:  # as DINO's freeze_last_layer
                    student["head"].prototypes.grad = None
                torch.nn.utils.clip_grad_norm_(params, settings["clip_grad"])
                optimiser.step()
                if objective == "dino":
                    dino.ema_update(teacher, student, dino.teacher_momentum(step, total, d["teacher_momentum"]))
                    center = dino.update_center(center, out_t, d["center_momentum"])
                total_loss += float(loss) * len(batch)
                step += 1
            losses.append(total_loss / len(x))
            log.info("%s seed %d epoch %d: loss %.4f", objective, seed, epoch + 1, losses[-1])
        trained = teacher["vit"] if objective == "dino" else model
        info: dict[str, Any] = {
            "objective": objective,
            "seed": seed,
            "vit": vit,
            "settings": settings,
            "n_train": len(x),
            "steps": total,
            "loss_by_epoch": losses,
        }
        if objective == "supervised":
            tx, ty = load_digits(test_data, trained)
            info["test_accuracy"] = accuracy(trained, tx, ty)
            info["n_test"] = len(ty)
            log.info("supervised seed %d: test accuracy %.4f", seed, info["test_accuracy"])
        info["seconds"] = round(time.perf_counter() - started, 1)
        info.update(machine(code_path, threads))
        _save(trained.eval(), vit, out_dir, info)
    return info
