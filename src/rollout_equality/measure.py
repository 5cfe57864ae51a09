"""Measure one model on one data set: attention → condition and rollout records (the hot path)."""

from __future__ import annotations

import json
import logging
import os
import platform
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any

import numpy as np

from rollout_equality.dobrushin import DEFAULT_ATOL, DEFAULT_ROW_SUM_ATOL
from rollout_equality.extract import Extractor, load, resolve_device
from rollout_equality.io import atomic_path, progress
from rollout_equality.records import analyse_input, write_records

log = logging.getLogger(__name__)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("rollout-equality", "numpy", "torch", "transformers", "timm"):
        try:
            out[pkg] = importlib_metadata.version(pkg)
        except importlib_metadata.PackageNotFoundError:
            pass
    return out


def measure_inputs(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    *,
    model: str,
    dataset: str,
    batch_size: int = 8,
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
    dump_inputs: int = 0,
) -> tuple[list[dict], list[dict], dict[str, np.ndarray]]:
    """Run the extractor batch by batch and analyse each input alone.

    Returns (layer rows, rollout rows, dumped attention of the first ``dump_inputs``
    inputs as arrays ``<id>/attention`` (L, n, n) float32 and ``<id>/special``).
    Memory stays bounded by one batch of attention maps.
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1; got {batch_size}")
    if len(ids) != len(inputs):
        raise ValueError(f"{len(ids)} ids for {len(inputs)} inputs")
    layer_rows: list[dict] = []
    rollout_rows: list[dict] = []
    dump: dict[str, np.ndarray] = {}
    starts = range(0, len(inputs), batch_size)
    for start in progress(starts, desc=f"{model} on {dataset}", unit="batch"):
        for k, (layers, special) in enumerate(extractor(inputs[start : start + batch_size])):
            input_id = ids[start + k]
            rows, ro = analyse_input(
                layers, special, model=model, dataset=dataset, input_id=input_id, atol=atol, row_sum_atol=row_sum_atol
            )
            layer_rows += rows
            rollout_rows += ro
            if start + k < dump_inputs:
                dump[f"{input_id}/attention"] = np.asarray(layers, dtype=np.float32)
                dump[f"{input_id}/special"] = np.asarray(special, dtype=bool)
    return layer_rows, rollout_rows, dump


def measure(
    model_info: dict[str, Any],
    data_dir: str | os.PathLike,
    out_path: str | os.PathLike,
    rollout_path: str | os.PathLike,
    *,
    model: str,
    dataset: str,
    batch_size: int = 8,
    device: str = "auto",
    atol: float = DEFAULT_ATOL,
    row_sum_atol: float = DEFAULT_ROW_SUM_ATOL,
    max_tokens: int | None = None,
    image_backend: str = "pil",
    dump_inputs: int = 0,
    dump_path: str | os.PathLike | None = None,
) -> None:
    """Records of ``model`` on the prepared data set in ``data_dir``: layer records to ``out_path``,
    rollout records to ``rollout_path``, attention of the first ``dump_inputs`` inputs to ``dump_path``."""
    from rollout_equality.data import load_inputs, read_manifest

    manifest = read_manifest(data_dir)
    if manifest["modality"] != model_info["modality"]:
        raise ValueError(
            f"model {model!r} reads {model_info['modality']} but data set {dataset!r} holds {manifest['modality']}"
        )
    ids, inputs, manifest = load_inputs(data_dir)
    device = resolve_device(device)
    extractor = load(model_info, device, max_tokens=max_tokens, image_backend=image_backend)
    log.info("measuring %s on %s: %d inputs, batch %d, device %s", model, dataset, len(ids), batch_size, device)
    layer_rows, rollout_rows, dump = measure_inputs(
        extractor,
        ids,
        inputs,
        model=model,
        dataset=dataset,
        batch_size=batch_size,
        atol=atol,
        row_sum_atol=row_sum_atol,
        dump_inputs=dump_inputs if dump_path else 0,
    )
    metadata = {
        "model": dict(model_info),
        "dataset": {
            "name": dataset,
            "sha256": manifest.get("sha256"),
            "n": manifest.get("n"),
            "origin": {k: v for k, v in (manifest.get("origin") or {}).items() if k != "digests"},
        },
        "condition": {"atol": atol, "row_sum_atol": row_sum_atol},
        "extraction": {
            "device": device,
            "batch_size": batch_size,
            "max_tokens": max_tokens,
            "attention": "eager, head-averaged in float32, analysed in float64",
            "preprocessing": extractor.preprocessing,
        },
        "versions": _versions(),
    }
    if dump_path:  # self-describing: the figures label the heatmap from it
        with atomic_path(dump_path) as tmp:
            with open(tmp, "wb") as fh:
                np.savez_compressed(fh, model=np.array(model), dataset=np.array(dataset), **dump)
    write_records(out_path, rollout_path, layer_rows, rollout_rows, metadata)
    holds = {ts: np.mean([r["holds"] for r in layer_rows if r["token_set"] == ts]) for ts in ("content", "all")}
    log.info(
        "%s on %s: condition holds in %.1f%% (content) / %.1f%% (all) of input-layer pairs",
        model,
        dataset,
        100 * holds["content"],
        100 * holds["all"],
    )


def read_model_info(path: str | os.PathLike) -> dict[str, Any]:
    """The ``model.json`` written by :func:`rollout_equality.models.prepare_model`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the model first (rule prepare_model)")
    return json.loads(path.read_text())
