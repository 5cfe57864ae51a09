"""Records: the contract between measurement and reporting.

One Parquet file per (model, dataset) with one row per (input, layer, token set) (:data:`LAYER_SCHEMA`),
and a companion rollout file (the workflow names it ``*.rollout.parquet``) with one row per
(input, token set, depth) (:data:`ROLLOUT_SCHEMA`); beside them the heads file (``*.heads.parquet``,
:data:`HEAD_SCHEMA`: per head and per fusion other than mean) and its rollout companion
(``*.heads.rollout.parquet``, :data:`FUSION_ROLLOUT_SCHEMA`), without rows where the config's ``analysis`` asks for
neither. :func:`rollout_equality.condition.analysis.analyse` gives every file's rows. Every column's meaning is in
:data:`COLUMNS` (docs/outputs.md is generated from the schemas and it). Tables and figures read only these files,
and the heatmap figure the attention dump (:func:`write_dump`).

File metadata (key ``rollout_equality``) holds the run's provenance as JSON, the same fields for every records file
(:func:`rollout_equality.measure.measure_and_write` writes them all): ``model`` (what was measured: its source,
revision, distribution and version, every file's SHA-256; no path), ``dataset`` (name, manifest hash, count),
``condition`` (the tolerances), ``extraction`` (batching, token limit, preprocessing, how attention was read) and
``compute`` (what decides the bits: device, torch's threads, the CPU code path, library versions;
:func:`rollout_equality.runtime.provenance.provenance`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Iterable, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from rollout_equality.config.schema import choices
from rollout_equality.runtime.files import atomic_path, write_parquet

TOKEN_SETS = choices("$defs", "token_set")
"""The token sets every input and layer is recorded on, in row order (the schema's)."""

LAYER_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("seed", pa.int32()),
        ("dataset", pa.string()),
        ("input_id", pa.string()),
        ("layer", pa.int16()),
        ("n_layers", pa.int16()),
        ("token_set", pa.string()),
        ("n_tokens", pa.int32()),
        ("holds", pa.bool_()),
        ("holds_direct", pa.bool_()),
        ("kappa", pa.float64()),
        ("kappa_half", pa.float64()),
        ("bound", pa.float64()),
        ("slack", pa.float64()),
        ("n_max_pairs", pa.int64()),
        ("witness_i", pa.int32()),
        ("witness_j", pa.int32()),
    ]
)

ROLLOUT_SCHEMA = pa.schema(
    [
        ("model", pa.string()),
        ("seed", pa.int32()),
        ("dataset", pa.string()),
        ("input_id", pa.string()),
        ("token_set", pa.string()),
        ("n_tokens", pa.int32()),
        ("depth", pa.int16()),
        ("n_layers", pa.int16()),
        ("kappa_rollout", pa.float64()),
        ("product_kappa_half", pa.float64()),
        ("product_bound", pa.float64()),
    ]
)


HEAD_SCHEMA = pa.schema(
    [
        *[LAYER_SCHEMA.field(name) for name in ("model", "seed", "dataset", "input_id", "layer", "n_layers")],
        ("n_heads", pa.int16()),
        ("head", pa.int16()),
        ("fusion", pa.string()),
        *[f for f in LAYER_SCHEMA if f.name not in ("model", "seed", "dataset", "input_id", "layer", "n_layers")],
    ]
)
"""The heads file: the layer records' columns for one head's or one fused matrix
(:mod:`rollout_equality.condition.heads`), one row per (input, layer, head, token set) with ``head`` set and
``fusion`` null, and one per (input, layer, fusion, token set) for each fusion other than mean with ``fusion`` set
and ``head`` null."""

FUSION_ROLLOUT_SCHEMA = pa.schema(
    [
        *[ROLLOUT_SCHEMA.field(name) for name in ("model", "seed", "dataset", "input_id")],
        ("fusion", pa.string()),
        ("n_heads", pa.int16()),
        *[f for f in ROLLOUT_SCHEMA if f.name not in ("model", "seed", "dataset", "input_id")],
    ]
)
"""The heads file's rollout companion: the rollout records of each fused matrix other than mean, one row per
(input, fusion, token set, depth) (mean's are the rollout records)."""


COLUMNS = {
    "model": "the model's name in the config (FT-Transformer: `ftt_seed<N>`)",
    "seed": "the FT-Transformer's training seed; null for every other model",
    "dataset": "the data set's name in the config (FT-Transformer: the table's)",
    "input_id": "the input, as the data set's manifest names it",
    "layer": "the layer, from 0",
    "n_layers": "the model's number of layers",
    "token_set": "`content`: the special tokens removed and the rows renormalised; `all`: every token of the input",
    "n_tokens": "the tokens of the token set (the size n of the n × n matrix)",
    "holds": "the equality condition holds: a mutually self-dominant pair of rows attains κ(A) (the characterisation)",
    "holds_direct": "κ(½(I + A)) computed from its own entries equals ½(1 + κ(A)) within the tolerance",
    "kappa": "κ(A), the largest total-variation distance between two rows",
    "kappa_half": "κ(½(I + A)), computed directly",
    "bound": "the bound ½(1 + κ(A))",
    "slack": "bound − kappa_half (0 at equality)",
    "n_max_pairs": "the pairs of rows attaining κ(A) within the tolerance (ties of the maximum)",
    "witness_i": "where the condition holds, the pair of rows that shows it (rows of the token set's matrix; -1: none)",
    "witness_j": "the other row of that pair",
    "depth": "the rollout through layers 0 to depth",
    "kappa_rollout": "κ of the rollout Π ½(I + A_l)",
    "product_kappa_half": "the product Π κ(½(I + A_l)) of the layers' coefficients",
    "product_bound": "the product bound Π ½(1 + κ(A_l))",
    "n_heads": "the model's attention heads per layer",
    "head": "the head, from 0, whose own attention the row tests (null: a fused row)",
    "fusion": "the head fusion the row tests: `max` or `min` over heads, each row renormalised to sum to 1 "
    "(null: one head's row); `mean`, the paper's, is the layer and rollout records",
}
"""What each column of :data:`LAYER_SCHEMA`, :data:`ROLLOUT_SCHEMA`, :data:`HEAD_SCHEMA` and
:data:`FUSION_ROLLOUT_SCHEMA` holds (each column once; in the heads files a column means the same for the head's
or the fused matrix)."""

SCHEMAS = {
    "layer": LAYER_SCHEMA,
    "rollout": ROLLOUT_SCHEMA,
    "heads": HEAD_SCHEMA,
    "heads rollout": FUSION_ROLLOUT_SCHEMA,
}
"""Every records file's schema, by the name docs/outputs.md gives the file."""


def _write(rows: Iterable[dict], schema: pa.Schema, path: Path, metadata: dict) -> None:
    write_parquet(pa.Table.from_pylist(list(rows), schema=schema), path, metadata)


def write_records(
    path: str | os.PathLike,
    rollout_path: str | os.PathLike,
    layer_rows: list[dict],
    rollout_rows: list[dict],
    metadata: dict,
) -> None:
    """Write layer records to ``path`` and rollout records to ``rollout_path``, each atomically.

    The rollout file is written first, so an existing layer file always has its companion.
    """
    if not layer_rows:
        raise ValueError(f"no records to write to {path}: the data set gave no input")
    _write(rollout_rows, ROLLOUT_SCHEMA, Path(rollout_path), metadata)
    _write(layer_rows, LAYER_SCHEMA, Path(path), metadata)


def write_head_records(path, rollout_path, head_rows: list[dict], rollout_rows: list[dict], metadata: dict) -> None:
    """Write the heads file to ``path`` and its fused rollout companion to ``rollout_path``, each atomically (the
    rollout first). With the feature off both hold no row (the schema alone), so that a rule's outputs exist."""
    _write(rollout_rows, FUSION_ROLLOUT_SCHEMA, Path(rollout_path), metadata)
    _write(head_rows, HEAD_SCHEMA, Path(path), metadata)


def read_records(path: str | os.PathLike):
    """Read a records file (layer or rollout records) as a DataFrame."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"records file {path} is missing: run the measure step for this model and data set")
    return pq.read_table(path).to_pandas()


def seeded(frame):
    """Which rows of ``frame`` (records, or a table of rates with the records' ``seed`` column) are a trained
    FT-Transformer's: the runs with a training seed, the one way they are told apart (their model name,
    ``ftt_seed<N>``, is a label)."""
    return frame["seed"].notna()


def run_seeds(records):
    """(model, dataset, seed) of every seeded run (FT-Transformer, :func:`seeded`) in a frame of records (layer or
    rollout)."""
    runs = records.loc[seeded(records), ["model", "dataset", "seed"]].drop_duplicates()
    return runs.astype({"seed": int}).reset_index(drop=True)


class Dump(NamedTuple):
    """An attention dump (:func:`write_dump`, :func:`read_dump`)."""

    model: str
    dataset: str
    inputs: dict[str, tuple[np.ndarray, np.ndarray]]
    """Input id → (head-averaged attention (L, n, n) float32, special-token mask (n,) bool), in the order written
    (:func:`read_dump`: by id)."""


def write_dump(path: str | os.PathLike, dump: Dump) -> None:
    """Write the attention dump of a few inputs to ``path`` (``.npz``, atomically), self-describing: arrays ``model``
    and ``dataset``, and per input ``<id>/attention`` and ``<id>/special``. The heatmap figure reads it
    (:func:`read_dump`); this module owns the format."""
    arrays = {}
    for input_id, (attention, special) in dump.inputs.items():
        arrays[f"{input_id}/attention"] = np.asarray(attention, dtype=np.float32)
        arrays[f"{input_id}/special"] = np.asarray(special, dtype=bool)
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            np.savez_compressed(fh, model=np.array(dump.model), dataset=np.array(dump.dataset), **arrays)


def read_dump(path: str | os.PathLike) -> Dump:
    """The attention dump written by :func:`write_dump`, its inputs in the order of their ids (none: a run that
    dumped no input)."""
    with np.load(path) as npz:
        ids = sorted({k.rsplit("/", 1)[0] for k in npz.files if k.endswith("/attention")})
        inputs = {i: (npz[f"{i}/attention"], npz[f"{i}/special"]) for i in ids}
        return Dump(str(npz["model"]), str(npz["dataset"]), inputs)


def read_metadata(path: str | os.PathLike) -> dict:
    """The provenance stored in a records file."""
    meta = pq.read_schema(path).metadata or {}
    return json.loads(meta.get(b"rollout_equality", b"{}"))
