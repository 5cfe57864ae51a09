"""Measure one model on one data set: attention → condition and rollout records (the hot path)."""

from __future__ import annotations

import dataclasses
import logging
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, NamedTuple

import numpy as np

from rollout_equality.acquire.extract import Extractor, load
from rollout_equality.acquire.models import check_model, model_record
from rollout_equality.condition.analysis import Attention, Records, analyse
from rollout_equality.condition.dobrushin import DEFAULT_ENGINE, Engine
from rollout_equality.condition.records import TOKEN_SETS, Dump, write_dump, write_head_records, write_records
from rollout_equality.config.paths import MODEL_INFO, companions, snakemake_command
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


ATTENTION = "eager, each layer head-averaged in float32 as it is produced, analysed in float64 on the CPU"
"""How the transformers and timm extractors read attention (the records' ``extraction.attention``)."""


@dataclasses.dataclass(frozen=True)
class Reading:
    """How one run reads its inputs' attention: config ``extraction`` resolved for that run (:meth:`of`), or a
    table's FT-Transformer's own (:func:`rollout_equality.tabular.ftt.measure_ftt`). Its fields but the device and
    the dump are what the records' ``extraction`` provenance states."""

    device: str
    """The device of the forward pass, resolved (``cpu``, ``cuda:N``)."""
    threads: int
    """torch's threads for the forward pass on a CPU."""
    batch_size: int
    overlap: bool
    """Analyse each batch while the next one runs through the network (:func:`measure_inputs`), resolved."""
    batch_by_length: bool
    dump_inputs: int
    """How many of the first inputs' attention the dump holds (where a dump is written)."""
    max_tokens: int | None = None
    """A text model's token limit (recorded); None for other models."""
    attention: str = ATTENTION
    """How attention was read (recorded)."""

    def __post_init__(self) -> None:
        for name in ("batch_size", "threads"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1; got {getattr(self, name)}")

    @classmethod
    def of(cls, extraction: Extraction, modality: str) -> Reading:
        """``extraction`` for a model reading ``modality``: its device resolved, and with it ``overlap``
        (:func:`resolve_overlap`); its token limit for text."""
        device = resolve_device(extraction.device)
        return cls(
            device=device,
            threads=extraction.threads,
            batch_size=extraction.batch_size,
            overlap=resolve_overlap(extraction.overlap, device),
            batch_by_length=extraction.batch_by_length,
            dump_inputs=extraction.dump_inputs,
            max_tokens=extraction.max_tokens if modality == "text" else None,
        )


class Measured(NamedTuple):
    """What :func:`measure_inputs` returns."""

    records: Records
    """Every records file's rows, in input order (the heads file's none with the heads analysis off)."""
    dump: dict[str, tuple[np.ndarray, np.ndarray]]
    """The dumped inputs' attention by id, in input order (:class:`rollout_equality.condition.records.Dump`)."""


def measure_inputs(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    *,
    model: str,
    dataset: str,
    condition: Condition,
    reading: Reading,
    seed: int | None = None,
    workers: int | None = None,
    engine: Engine = DEFAULT_ENGINE,
    heads: HeadSettings = OFF,
) -> Measured:
    """Run the extractor batch by batch (``reading.batch_size`` inputs) and analyse each input alone, with the
    tolerances of ``condition`` and, beyond the head average, as ``heads`` asks (config ``analysis``; default: the
    head average alone). ``seed``: a trained FT-Transformer's, in the rows' ``seed``.

    Returns a :class:`Measured`: the records of every input (:func:`rollout_equality.condition.analysis.analyse`: the
    layer and rollout rows and, where ``heads`` asks for them, :class:`rollout_equality.config.settings.HeadSettings`,
    the per-head and fused rows; the extractor then keeps every head's attention: memory grows by the heads' count,
    and the head-averaged rows are the same bit for bit) and the attention of the first ``dump_inputs`` inputs by id
    ((L, n, n) float32, the special-token mask). Memory stays bounded by two batches of attention maps.

    Threads (:mod:`rollout_equality.runtime.threads` says why): the forward pass runs on ``reading.threads`` torch
    threads (``extraction.threads``); the analysis of a batch on ``workers`` threads (default: the job's), one task
    per input, token set and label (:func:`rollout_equality.condition.analysis.analyse`), with torch on one thread
    meanwhile: the records are the same bit for bit for any number of workers (tests/acquire/test_extract.py checks
    it).
    ``engine``: how the analysis computes (:class:`rollout_equality.condition.dobrushin.Engine`; the records are the
    same with every engine).

    ``reading.overlap``: analyse batch k on those workers while batch k + 1 runs through the network. Meant for
    a network on a GPU: torch keeps one CPU thread for the whole run (``threads`` is not used), which is the
    CPU's share of a GPU's forward pass; :func:`measure` refuses it on a CPU, where it would change the forward
    pass's thread count. The records are the same, in the same order, either way.

    ``reading.batch_by_length``: when the extractor tells the inputs' sizes (``input_sizes``: text), form the
    batches of inputs sorted by size (stable), so that little of a batch is padding (on 200 segments
    of 20-100 words, 1.6x fewer token positions than batches in input order). Records and dump
    still come in input order; a float may differ from the input-order batches in its last bits, as
    any change of batch composition does (padding is removed per input).
    """
    if len(ids) != len(inputs):
        raise ValueError(f"{len(ids)} ids for {len(inputs)} inputs")
    if workers is None:
        workers = job_threads()
    if workers < 1:
        raise ValueError(f"workers must be at least 1; got {workers}")
    order = batch_order(extractor, inputs) if reading.batch_by_length else list(range(len(inputs)))
    by_input: list[Records | None] = [None] * len(inputs)
    dumped: dict[int, tuple[np.ndarray, np.ndarray]] = {}

    def extract(picked: list[int]) -> list[Attention]:
        chosen = [inputs[i] for i in picked]
        return extractor(chosen, heads=True) if heads.on else extractor(chosen)

    def analyse_batch(picked: list[int], batch: list[Attention]) -> list[Records]:
        return analyse(
            batch,
            [ids[i] for i in picked],
            model=model,
            dataset=dataset,
            seed=seed,
            settings=heads,
            atol=condition.atol,
            row_sum_atol=condition.row_sum_atol,
            pool=pool,
            engine=engine,
        )

    def collect(picked: list[int], batch: list[Attention], analysed: list[Records]) -> None:
        for i, attention, records in zip(picked, batch, analysed):
            by_input[i] = records
            if i < reading.dump_inputs:
                dumped[i] = (np.asarray(attention[0], dtype=np.float32), np.asarray(attention[1], dtype=bool))

    size = reading.batch_size
    batches = [order[s : s + size] for s in range(0, len(inputs), size)]
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="analyse") as pool:
        if not reading.overlap:
            for picked in progress(batches, desc=f"{model} on {dataset}", unit="batch"):
                with torch_threads(reading.threads):
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
    return Measured(Records.joined(by_input), {ids[i]: dumped[i] for i in sorted(dumped)})


class Outputs(NamedTuple):
    """Where one measurement writes: the layer records and their rollout companion; the heads file and its rollout
    companion (both or neither; written whenever given, without rows where the analysis measures nothing beyond the
    head average); the attention dump (none without it)."""

    records: str | os.PathLike
    rollout: str | os.PathLike
    heads: str | os.PathLike | None = None
    heads_rollout: str | os.PathLike | None = None
    dump: str | os.PathLike | None = None

    @classmethod
    def beside(cls, records: str | os.PathLike, dump: str | os.PathLike | None = None) -> Outputs:
        """``records`` and its companions named as the workflow names them
        (:func:`rollout_equality.config.paths.companions`)."""
        beside = companions(str(records))
        return cls(records, beside["rollout"], beside["heads"], beside["heads_rollout"], dump)


def measure_and_write(
    extractor: Extractor,
    ids: list[str],
    inputs: list[Any],
    outputs: Outputs,
    *,
    model: str,
    dataset: str,
    model_record: dict[str, Any],
    dataset_record: dict[str, Any],
    reading: Reading,
    condition: Condition,
    heads: HeadSettings = OFF,
    seed: int | None = None,
) -> dict[str, float]:
    """Measure ``inputs`` (:func:`measure_inputs`, read as ``reading`` says, tested with the tolerances of
    ``condition``, beyond the head average as ``heads`` asks) and write ``outputs``, each file atomically, with one
    provenance for every records file of the project: the model and data set records as given, the condition's
    tolerances, the extraction (batching, the token limit, the preprocessing the extractor reports, how attention
    was read), and what decides the bits (:func:`rollout_equality.runtime.provenance.provenance`: device, torch's
    threads, CPU code path, library versions). The attention of the first ``reading.dump_inputs`` inputs goes to
    ``outputs.dump`` (self-describing: the figures label the heatmap from it). The heads file and its rollout
    companion get the same provenance and the settings under ``analysis``; the layer and rollout records are the same
    bytes either way. ``seed``: a trained FT-Transformer's, in the records' ``seed`` column. Returns the rates of the
    condition per token set and logs them."""
    if (outputs.heads is None) != (outputs.heads_rollout is None):
        raise ValueError("give the heads file and its rollout companion together (Outputs.heads, heads_rollout)")
    if heads.on and outputs.heads is None:
        raise ValueError(f"the heads analysis is on ({heads}) but no heads file was given to write it to")
    dumping = reading if outputs.dump else dataclasses.replace(reading, dump_inputs=0)
    records, dumped = measure_inputs(
        extractor,
        ids,
        inputs,
        model=model,
        dataset=dataset,
        condition=condition,
        reading=dumping,
        seed=seed,
        heads=heads,
    )
    metadata = {
        "model": model_record,
        "dataset": dataset_record,
        "condition": dataclasses.asdict(condition),
        "extraction": {
            "batch_size": reading.batch_size,
            "overlap": reading.overlap,
            "batch_by_length": reading.batch_by_length,
            **({"max_tokens": reading.max_tokens} if reading.max_tokens is not None else {}),
            "attention": reading.attention,
            "preprocessing": getattr(extractor, "preprocessing", None),
        },
        "compute": provenance(reading.device, threads=1 if reading.overlap else reading.threads),
    }
    if outputs.dump:
        write_dump(outputs.dump, Dump(model, dataset, dumped))
    if outputs.heads is not None:
        analysis = {"per_head": heads.per_head, "fusions": list(heads.fusions)}
        write_head_records(
            outputs.heads,
            outputs.heads_rollout,
            records.heads,
            records.heads_rollout,
            {**metadata, "analysis": analysis},
        )
    write_records(outputs.records, outputs.rollout, records.layer, records.rollout, metadata)
    rates = {ts: float(np.mean([r["holds"] for r in records.layer if r["token_set"] == ts])) for ts in TOKEN_SETS}
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
    outputs: Outputs,
    *,
    model: str,
    dataset: str,
    extraction: Extraction,
    condition: Condition,
    heads: HeadSettings = OFF,
    model_rerun: str | None = None,
    inputs: int | None = None,
) -> dict[str, float]:
    """Records of ``model`` on the first ``inputs`` (None: all) of the prepared data set in ``data_dir``, read as
    ``extraction`` says, tested with the tolerances of ``condition`` and, beyond the head average, as ``heads`` asks
    (config ``analysis``), written to ``outputs`` (:func:`measure_and_write`). Returns the rates.

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
    reading = Reading.of(extraction, model_info["modality"])
    extractor = load(
        model_info, reading.device, max_tokens=extraction.max_tokens, image_backend=extraction.image_backend
    )
    log.info(
        "measuring %s on %s: %d inputs, batch %d, device %s, %d forward threads",
        model,
        dataset,
        len(ids),
        reading.batch_size,
        reading.device,
        reading.threads,
    )
    import torch

    try:
        return measure_and_write(
            extractor,
            ids,
            items,
            outputs,
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
            reading=reading,
            condition=condition,
            heads=heads,
        )
    except torch.OutOfMemoryError as err:
        raise RuntimeError(
            f"{reading.device} ran out of memory measuring {model} on {dataset} with extraction.batch_size "
            f"{extraction.batch_size}: set extraction.batch_size lower (e.g. {max(1, extraction.batch_size // 2)}; "
            "each input's attention is held one layer at a time, so memory grows with the batch), in config.yaml or "
            "an overlay. More host memory (a retry with a larger mem_mb) does not help."
        ) from err
