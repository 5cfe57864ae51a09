"""Measure one model on one data set: attention → condition and rollout records (the hot path)."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from rollout_equality.acquire.extract import Extractor, load
from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine
from rollout_equality.condition.heads import analyse_head_inputs, write_head_records
from rollout_equality.condition.records import TOKEN_SETS, Dump, analyse_inputs, write_dump, write_records
from rollout_equality.config.paths import MODEL_INFO, snakemake_command
from rollout_equality.config.settings import OFF, Condition, Extraction, HeadSettings
from rollout_equality.runtime.device import resolve_device
from rollout_equality.runtime.files import progress
from rollout_equality.runtime.provenance import provenance
from rollout_equality.runtime.threads import job_threads, torch_threads

log = logging.getLogger(__name__)


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


class Measured(NamedTuple):
    """What :func:`measure_inputs` returns: the records' rows, in input order, and the dumped attention."""

    layer_rows: list[dict]
    rollout_rows: list[dict]
    dump: dict[str, tuple[np.ndarray, np.ndarray]]
    """The dumped inputs' attention by id, in input order (:class:`rollout_equality.condition.records.Dump`)."""
    head_rows: list[dict]
    """The heads file's rows (:data:`rollout_equality.condition.records.HEAD_SCHEMA`); none with the heads analysis off."""
    head_rollout_rows: list[dict]
    """The fused rollouts' rows (:data:`rollout_equality.condition.records.FUSION_ROLLOUT_SCHEMA`)."""


def measure_inputs(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    *,
    model: str,
    dataset: str,
    condition: Condition,
    batch_size: int,
    threads: int,
    dump_inputs: int,
    overlap: bool,
    batch_by_length: bool,
    seed: int | None = None,
    workers: int | None = None,
    engine: Engine = DEFAULT_ENGINE,
    heads: HeadSettings = OFF,
) -> Measured:
    """Run the extractor batch by batch and analyse each input alone, with the tolerances of ``condition``.

    ``dump_inputs``, ``overlap`` and ``batch_by_length`` are config.yaml's ``extraction`` settings, given by the
    caller (the workflow's through :func:`measure`); ``heads`` its ``analysis`` (default: head-averaged only).

    Returns a :class:`Measured`: layer rows, rollout rows, the attention of the first ``dump_inputs`` inputs by id
    ((L, n, n) float32, the special-token mask), and, where ``heads`` asks for them
    (:class:`rollout_equality.config.settings.HeadSettings`), the per-head and fused rows (the extractor then keeps every
    head's attention: memory grows by the heads' count; the head-averaged rows are the same bit for bit).
    Memory stays bounded by two batches of attention maps.

    Threads (:mod:`rollout_equality.runtime.threads` says why): the forward pass runs on ``threads`` torch threads
    (``extraction.threads``); the analysis of a batch on ``workers`` threads (default: the job's), one task per input
    and token set (:func:`rollout_equality.condition.records.analyse_inputs`), with torch on one thread meanwhile: the
    records are the same bit for bit for any number of workers (tests/acquire/test_extract.py checks it).
    ``engine``: how the analysis computes (:class:`rollout_equality.condition.dobrushin.Engine`; the records are the
    same with every engine).

    ``overlap``: analyse batch k on those workers while batch k + 1 runs through the network. Meant for
    a network on a GPU: torch keeps one CPU thread for the whole run (``threads`` is not used), which is the
    CPU's share of a GPU's forward pass; :func:`measure` refuses it on a CPU, where it would change the forward
    pass's thread count. The records are the same, in the same order, either way.

    ``batch_by_length``: when the extractor tells the inputs' sizes (``input_sizes``: text), form the
    batches of inputs sorted by size (stable), so that little of a batch is padding (on 200 segments
    of 20-100 words, 1.6x fewer token positions than batches in input order). Records and dump
    still come in input order; a float may differ from the input-order batches in its last bits, as
    any change of batch composition does (padding is removed per input).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1; got {batch_size}")
    if threads < 1:
        raise ValueError(f"threads must be at least 1; got {threads}")
    if len(ids) != len(inputs):
        raise ValueError(f"{len(ids)} ids for {len(inputs)} inputs")
    if workers is None:
        workers = job_threads()
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    order = batch_order(extractor, inputs) if batch_by_length else list(range(len(inputs)))
    analysed_by_input: list[tuple[list, list] | None] = [None] * len(inputs)
    heads_by_input: list[tuple[list, list]] = [([], [])] * len(inputs)
    dumped: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def extract(picked: list[int]) -> list[tuple]:
        if not heads.on:
            return extractor([inputs[i] for i in picked])
        return extractor([inputs[i] for i in picked], heads=True)

    def analyse_batch(picked: list[int], batch: list[tuple]) -> list[tuple[tuple[list, list], tuple[list, list]]]:
        kwargs = dict(
            model=model,
            dataset=dataset,
            seed=seed,
            atol=condition.atol,
            row_sum_atol=condition.row_sum_atol,
            pool=pool,
            engine=engine,
        )
        picked_ids = [ids[i] for i in picked]
        averaged = analyse_inputs([(item[0], item[1]) for item in batch], picked_ids, **kwargs)
        if not heads.on:
            return [(rows, ([], [])) for rows in averaged]
        per_head = analyse_head_inputs([(item[2], item[1]) for item in batch], picked_ids, settings=heads, **kwargs)
        return list(zip(averaged, per_head))

    def collect(picked: list[int], batch, analysed) -> None:
        for i, item, (rows, head_rows) in zip(picked, batch, analysed):
            analysed_by_input[i], heads_by_input[i] = rows, head_rows
            if i < dump_inputs:
                dumped[i] = (np.asarray(item[0], dtype=np.float32), np.asarray(item[1], dtype=bool))

    batches = [order[s : s + batch_size] for s in range(0, len(inputs), batch_size)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyse") as pool:
        if not overlap:
            for picked in progress(batches, desc=f"{model} on {dataset}", unit="batch"):
                with torch_threads(threads):
                    batch = extract(picked)
                with torch_threads(1):
                    collect(picked, batch, analyse_batch(picked, batch))
        else:
            with torch_threads(1), ThreadPoolExecutor(max_workers=1, thread_name_prefix="batch") as coordinator:
                pending = None
                for picked in progress(batches, desc=f"{model} on {dataset}", unit="batch"):
                    batch = extract(picked)
                    if pending is not None:
                        collect(*pending[:2], pending[2].result())
                    pending = (picked, batch, coordinator.submit(analyse_batch, picked, batch))
                if pending is not None:
                    collect(*pending[:2], pending[2].result())
    layer_rows = [row for rows, _ in analysed_by_input for row in rows]
    rollout_rows = [row for _, ro in analysed_by_input for row in ro]
    dump = {ids[i]: dumped[i] for i in sorted(dumped)}
    head_rows = [row for rows, _ in heads_by_input for row in rows]
    head_rollout_rows = [row for _, ro in heads_by_input for row in ro]
    return Measured(layer_rows, rollout_rows, dump, head_rows, head_rollout_rows)


ATTENTION = "eager, each layer head-averaged in float32 as it is produced, analysed in float64 on the CPU"


def measure_and_write(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    records: str | os.PathLike,
    rollout: str | os.PathLike,
    *,
    model: str,
    dataset: str,
    model_record: dict[str, Any],
    dataset_record: dict[str, Any],
    condition: Condition,
    device: str,
    threads: int,
    batch_size: int,
    overlap: bool,
    batch_by_length: bool,
    dump_inputs: int,
    settings: dict[str, Any] | None = None,
    seed: int | None = None,
    dump: str | os.PathLike | None = None,
    attention: str = ATTENTION,
    heads: HeadSettings = OFF,
    heads_path: str | os.PathLike | None = None,
    heads_rollout_path: str | os.PathLike | None = None,
) -> dict[str, float]:
    """Measure ``inputs`` (:func:`measure_inputs`) and write the layer records to ``records`` and the rollout records to
    ``rollout`` (each atomically), with one provenance for every records file of the project: the model and data set
    records as given, the condition's tolerances, the extraction (batching, ``settings`` such as the token limit,
    the preprocessing the extractor reports, how attention was read), and what decides the bits
    (:func:`rollout_equality.runtime.provenance.provenance`: device, torch's threads, CPU code path, library versions). The
    attention of the first ``dump_inputs`` inputs goes to ``dump`` (self-describing: the figures label the heatmap
    from it). With ``heads_path`` (and ``heads_rollout_path``), the per-head and fused records that ``heads`` asks
    for go there (:func:`rollout_equality.condition.heads.write_head_records`; no rows where it asks for none), with the same
    provenance and the settings under ``analysis``; the layer and rollout records are the same bytes either way.
    Returns the rates of the condition per token set and logs them."""
    if (heads_path is None) != (heads_rollout_path is None):
        raise ValueError("give heads_path and heads_rollout_path together (the heads file and its rollout companion)")
    if heads.on and heads_path is None:
        raise ValueError(f"the heads analysis is on ({heads}) but no heads_path was given to write it to")
    layer_rows, rollout_rows, dumped, head_rows, head_rollout_rows = measure_inputs(
        extractor,
        ids,
        inputs,
        model=model,
        dataset=dataset,
        condition=condition,
        batch_size=batch_size,
        threads=threads,
        seed=seed,
        dump_inputs=dump_inputs if dump else 0,
        overlap=overlap,
        batch_by_length=batch_by_length,
        heads=heads,
    )
    metadata = {
        "model": model_record,
        "dataset": dataset_record,
        "condition": dataclasses.asdict(condition),
        "extraction": {
            "batch_size": batch_size,
            "overlap": overlap,
            "batch_by_length": batch_by_length,
            **(settings or {}),
            "attention": attention,
            "preprocessing": getattr(extractor, "preprocessing", None),
        },
        "compute": provenance(device, threads=1 if overlap else threads),
    }
    if dump:
        write_dump(dump, Dump(model, dataset, dumped))
    if heads_path is not None:
        analysis = {"per_head": heads.per_head, "fusions": list(heads.fusions)}
        write_head_records(
            heads_path, heads_rollout_path, head_rows, head_rollout_rows, {**metadata, "analysis": analysis}
        )
    write_records(records, rollout, layer_rows, rollout_rows, metadata)
    rates = {ts: float(np.mean([r["holds"] for r in layer_rows if r["token_set"] == ts])) for ts in TOKEN_SETS}
    log.info(
        "%s on %s: condition holds in %s of input-layer pairs",
        model,
        dataset,
        " / ".join(f"{100 * rate:.1f}% ({ts})" for ts, rate in rates.items()),
    )
    return rates


def resolve_overlap(overlap: bool | str, device: str) -> bool:
    """``extraction.overlap`` for a run on ``device``: auto → on a CUDA device only; true on a CPU is refused (the
    forward pass would run on one thread, not ``extraction.threads``, and give other bits)."""
    if overlap == "auto":
        return device.startswith("cuda")
    if overlap and not device.startswith("cuda"):
        raise ValueError(
            f"extraction.overlap is true but the forward pass runs on {device}: overlapping runs it on one CPU thread, "
            "which changes its bits and gains nothing on a CPU; set extraction.overlap to auto or false"
        )
    return bool(overlap)


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
    model_rerun: str | None = None,
    heads: HeadSettings = OFF,
    heads_path: str | os.PathLike | None = None,
    heads_rollout_path: str | os.PathLike | None = None,
    inputs: int | None = None,
) -> dict[str, float]:
    """Records of ``model`` on the first ``inputs`` (None: all) of the prepared data set in ``data_dir``, read as ``extraction`` says and tested with
    the tolerances of ``condition``: layer records to ``out_path``, rollout records to ``rollout_path``, attention
    of the first ``extraction.dump_inputs`` inputs to ``dump_path`` (none without it), the per-head and fused records
    that ``heads`` asks for (config ``analysis``) to ``heads_path`` and ``heads_rollout_path``. Returns the rates.

    The model's files and every input are checked against what was recorded when they were prepared before the model
    runs (a mismatch raises naming the file and what to run again: ``model_rerun``, or by default rule
    prepare_model; no records are written)."""
    from rollout_equality.acquire.data import load_inputs, read_manifest

    manifest = read_manifest(data_dir)
    if manifest["modality"] != model_info["modality"]:
        raise ValueError(
            f"model {model!r} reads {model_info['modality']} but data set {dataset!r} holds {manifest['modality']}"
        )
    check_model(
        model_info,
        rerun=model_rerun
        or f"prepare it again ({snakemake_command(MODEL_INFO.format(model=model), '--forcerun', 'prepare_model')})",
    )
    ids, items, manifest = load_inputs(data_dir)
    if inputs is not None:
        if inputs > len(ids):
            raise ValueError(f"{model} on {dataset}: inputs {inputs} asked for, the data set holds {len(ids)}")
        ids, items = ids[:inputs], items[:inputs]
    device = resolve_device(extraction.device)
    overlap = resolve_overlap(extraction.overlap, device)
    extractor = load(model_info, device, max_tokens=extraction.max_tokens, image_backend=extraction.image_backend)
    log.info(
        "measuring %s on %s: %d inputs, batch %d, device %s, %d forward threads",
        model,
        dataset,
        len(ids),
        extraction.batch_size,
        device,
        extraction.threads,
    )
    import torch

    try:
        return measure_and_write(
            extractor,
            ids,
            items,
            out_path,
            rollout_path,
            model=model,
            dataset=dataset,
            model_record=model_record(model_info),
            dataset_record={
                "name": dataset,
                "sha256": manifest.get("sha256"),
                "n": manifest.get("n"),
                "measured": len(ids),
                "origin": {k: v for k, v in (manifest.get("origin") or {}).items() if k != "digests"},
            },
            condition=condition,
            device=device,
            threads=extraction.threads,
            batch_size=extraction.batch_size,
            settings={"max_tokens": extraction.max_tokens} if model_info["modality"] == "text" else None,
            overlap=overlap,
            batch_by_length=extraction.batch_by_length,
            dump=dump_path,
            dump_inputs=extraction.dump_inputs,
            heads=heads,
            heads_path=heads_path,
            heads_rollout_path=heads_rollout_path,
        )
    except torch.OutOfMemoryError as err:
        raise RuntimeError(
            f"{device} ran out of memory measuring {model} on {dataset} with extraction.batch_size "
            f"{extraction.batch_size}: set extraction.batch_size lower (e.g. {max(1, extraction.batch_size // 2)}; "
            "each input's attention is held one layer at a time, so memory grows with the batch), in config.yaml or "
            "an overlay. More host memory (a retry with a larger mem_mb) does not help."
        ) from err


def check_model(model_info: dict[str, Any], rerun: str) -> None:
    """Check a prepared model's files against what :func:`rollout_equality.acquire.models.prepare_model` recorded (each
    file's size and modification time, and in full its SHA-256 when either changed): raises naming the first file
    that is missing or differs, and ``rerun``, what to run again."""
    from rollout_equality.acquire.models import ModifiedFileError, verify_files

    what = f"model {model_info.get('name')!r}"
    if "files" not in model_info:
        raise ModifiedFileError(
            f"{what}: its model.json records no files to check (it was prepared by an older version); {rerun}"
        )
    start = time.perf_counter()
    hashed = verify_files(Path(model_info["path"]), model_info["files"], model_info.get("stamps", {}), what, rerun)
    log.info(
        "%s: %d files checked, %.1f MB hashed in %.2f s",
        what,
        len(model_info["files"]),
        hashed / 1e6,
        time.perf_counter() - start,
    )


def model_record(model_info: dict[str, Any]) -> dict[str, Any]:
    """``model_info`` (a ``model.json``) as the records' provenance: what was measured (source, revision, distribution
    and version, every file's size and SHA-256), not where it lay on disk nor when (``path`` and the files'
    ``stamps`` are left out), so that the same model gives the same record bytes in any folder and environment."""
    return {k: v for k, v in model_info.items() if k not in ("path", "stamps")}


def read_model_info(path: str | os.PathLike) -> dict[str, Any]:
    """The ``model.json`` written by :func:`rollout_equality.acquire.models.prepare_model`, its ``path`` located
    (:func:`rollout_equality.acquire.models.located_path`: the recorded path is relative to the model.json's folder or to
    an installed distribution)."""
    from rollout_equality.acquire.models import located_path

    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: prepare the model first (rule prepare_model)")
    info = json.loads(path.read_text())
    return {**info, "path": str(located_path(info, path))}  # the files, wherever this run now is
