"""Measure one model on one data set: attention → condition and rollout records (the hot path)."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import platform
from concurrent.futures import ThreadPoolExecutor
from importlib import metadata as importlib_metadata
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from rollout_equality.dobrushin import DEFAULT_ENGINE, Engine
from rollout_equality.extract import Extractor, load, resolve_device
from rollout_equality.io import atomic_path, progress
from rollout_equality.records import analyse_inputs, write_records
from rollout_equality.settings import Condition, Extraction

log = logging.getLogger(__name__)


def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("rollout-equality", "numpy", "torch", "transformers", "timm"):
        try:
            out[pkg] = importlib_metadata.version(pkg)
        except importlib_metadata.PackageNotFoundError:
            pass
    return out


@contextlib.contextmanager
def _torch_threads(n: int) -> Iterator[None]:
    """torch's intra-op threads set to ``n`` within the block, restored after it."""
    import torch

    previous = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(previous)


def batch_order(extractor: Extractor, inputs: list[Any]) -> list[int]:
    """Input indices sorted by the extractor's ``input_sizes`` (stable), or in input order when it has
    none or returns None (images: every input has the same size)."""
    sizes_of = getattr(extractor, "input_sizes", None)
    sizes = sizes_of(inputs) if sizes_of is not None else None
    if sizes is None:
        return list(range(len(inputs)))
    if len(sizes) != len(inputs):
        raise ValueError(f"input_sizes gave {len(sizes)} sizes for {len(inputs)} inputs")
    return sorted(range(len(inputs)), key=sizes.__getitem__)


def measure_inputs(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    *,
    model: str,
    dataset: str,
    condition: Condition,
    batch_size: int,
    seed: int | None = None,
    dump_inputs: int = 0,
    overlap: bool = False,
    batch_by_length: bool = False,
    workers: int | None = None,
    engine: Engine = DEFAULT_ENGINE,
) -> tuple[list[dict], list[dict], dict[str, np.ndarray]]:
    """Run the extractor batch by batch and analyse each input alone, with the tolerances of ``condition``.

    The options default to off (no dump, no overlap, batches in input order); the workflow's settings come
    from config.yaml's ``extraction`` section through :func:`measure`.

    Returns (layer rows, rollout rows, dumped attention of the first ``dump_inputs``
    inputs as arrays ``<id>/attention`` (L, n, n) float32 and ``<id>/special``).
    Memory stays bounded by two batches of attention maps.

    The analysis of a batch runs on ``workers`` threads (default: torch's thread count, which the
    workflow sets to the rule's threads), one task per input and token set
    (:func:`rollout_equality.records.analyse_inputs`); torch gets one thread while they run, so that
    their rollout products do not each start a team of torch's threads. ``engine``: how the analysis computes
    (:class:`rollout_equality.dobrushin.Engine`; the records are the same with every engine).

    ``overlap``: analyse batch k on those workers while batch k + 1 runs through the network. Meant for
    a network on a GPU: torch keeps one CPU thread for the whole run (on a CPU the network then runs
    on one thread beside the analysis). The records are the same, in the same order, either way.

    ``batch_by_length``: when the extractor tells the inputs' sizes (``input_sizes``: text), form the
    batches of inputs sorted by size (stable), so that little of a batch is padding (on 200 segments
    of 20-100 words, 1.6x fewer token positions than batches in input order). Records and dump
    still come in input order; a float may differ from the input-order batches in its last bits, as
    any change of batch composition does (padding is removed per input).
    """
    import torch

    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1; got {batch_size}")
    if len(ids) != len(inputs):
        raise ValueError(f"{len(ids)} ids for {len(inputs)} inputs")
    if workers is None:
        workers = torch.get_num_threads()
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    order = batch_order(extractor, inputs) if batch_by_length else list(range(len(inputs)))
    analysed_by_input: list[tuple[list, list] | None] = [None] * len(inputs)
    dumped: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def analyse_batch(picked: list[int], batch: list[tuple[np.ndarray, np.ndarray]]) -> list[tuple[list, list]]:
        return analyse_inputs(
            batch,
            [ids[i] for i in picked],
            model=model,
            dataset=dataset,
            seed=seed,
            atol=condition.atol,
            row_sum_atol=condition.row_sum_atol,
            pool=pool,
            engine=engine,
        )

    def collect(picked: list[int], batch, analysed) -> None:
        for i, (layers, special), rows in zip(picked, batch, analysed):
            analysed_by_input[i] = rows
            if i < dump_inputs:
                dumped[i] = (np.asarray(layers, dtype=np.float32), np.asarray(special, dtype=bool))

    batches = [order[s : s + batch_size] for s in range(0, len(inputs), batch_size)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyse") as pool:
        if not overlap:
            for picked in progress(batches, desc=f"{model} on {dataset}", unit="batch"):
                batch = extractor([inputs[i] for i in picked])
                with _torch_threads(1):
                    collect(picked, batch, analyse_batch(picked, batch))
        else:
            with _torch_threads(1), ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch") as coordinator:
                pending = None
                for picked in progress(batches, desc=f"{model} on {dataset}", unit="batch"):
                    batch = extractor([inputs[i] for i in picked])
                    if pending is not None:
                        collect(*pending[:2], pending[2].result())
                    pending = (picked, batch, coordinator.submit(analyse_batch, picked, batch))
                if pending is not None:
                    collect(*pending[:2], pending[2].result())
    layer_rows = [row for rows, _ in analysed_by_input for row in rows]
    rollout_rows = [row for _, ro in analysed_by_input for row in ro]
    dump: dict[str, np.ndarray] = {}
    for i in sorted(dumped):
        dump[f"{ids[i]}/attention"], dump[f"{ids[i]}/special"] = dumped[i]
    return layer_rows, rollout_rows, dump


def measure(
    model_info: dict[str, Any],
    data_dir: str | os.PathLike,
    out_path: str | os.PathLike,
    rollout_path: str | os.PathLike,
    *,
    model: str,
    dataset: str,
    extraction: Extraction,
    condition: Condition,
    dump_path: str | os.PathLike | None = None,
) -> None:
    """Records of ``model`` on the prepared data set in ``data_dir``, read as ``extraction`` says and tested with
    the tolerances of ``condition``: layer records to ``out_path``, rollout records to ``rollout_path``, attention
    of the first ``extraction.dump_inputs`` inputs to ``dump_path`` (none without it)."""
    from rollout_equality.data import load_inputs, read_manifest

    manifest = read_manifest(data_dir)
    if manifest["modality"] != model_info["modality"]:
        raise ValueError(
            f"model {model!r} reads {model_info['modality']} but data set {dataset!r} holds {manifest['modality']}"
        )
    ids, inputs, manifest = load_inputs(data_dir)
    device = resolve_device(extraction.device)
    overlap = extraction.overlap
    if overlap == "auto":  # analyse beside the network when the network is not on the CPU's cores
        overlap = device.startswith("cuda")
    batch_size = extraction.batch_size
    extractor = load(model_info, device, max_tokens=extraction.max_tokens, image_backend=extraction.image_backend)
    log.info("measuring %s on %s: %d inputs, batch %d, device %s", model, dataset, len(ids), batch_size, device)
    layer_rows, rollout_rows, dump = measure_inputs(
        extractor,
        ids,
        inputs,
        model=model,
        dataset=dataset,
        condition=condition,
        batch_size=batch_size,
        dump_inputs=extraction.dump_inputs if dump_path else 0,
        overlap=overlap,
        batch_by_length=extraction.batch_by_length,
    )
    metadata = {
        "model": _portable(model_info),
        "dataset": {
            "name": dataset,
            "sha256": manifest.get("sha256"),
            "n": manifest.get("n"),
            "origin": {k: v for k, v in (manifest.get("origin") or {}).items() if k != "digests"},
        },
        "condition": dataclasses.asdict(condition),
        "extraction": {
            "device": device,
            "batch_size": batch_size,
            "overlap": overlap,
            "batch_by_length": extraction.batch_by_length,
            "max_tokens": extraction.max_tokens,
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


def _portable(model_info: dict[str, Any]) -> dict[str, Any]:
    """``model_info`` for the records' provenance, its ``path`` relative to the working directory when inside it
    (a prepared model under resources/): the same inputs then give the same record bytes in any project folder."""
    info = dict(model_info)
    if "path" in info:
        try:
            info["path"] = Path(info["path"]).resolve().relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:  # outside the project (an installed package's folder): kept as it is
            pass
    return info


def read_model_info(path: str | os.PathLike) -> dict[str, Any]:
    """The ``model.json`` written by :func:`rollout_equality.models.prepare_model`."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the model first (rule prepare_model)")
    return json.loads(path.read_text())
