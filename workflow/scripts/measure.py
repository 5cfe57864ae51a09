"""rule measure → rollout_equality.measure.measure"""

import os
from pathlib import Path

# Compute jobs never reach the hub: models and data were prepared by local rules.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["HF_DATASETS_OFFLINE"] = "1"
os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)

import _checkout  # noqa: F401,E402  (this checkout's library first)
import torch  # noqa: E402

from rollout_equality.io import logging_to  # noqa: E402
from rollout_equality.measure import measure, read_model_info  # noqa: E402

torch.set_num_threads(snakemake.threads)
with logging_to(snakemake.log[0]):
    ex, cond, w = snakemake.params.extraction, snakemake.params.condition, snakemake.wildcards
    measure(
        read_model_info(snakemake.input.model),
        Path(snakemake.input.data).parent,
        snakemake.output.records,
        snakemake.output.rollout,
        model=w.model,
        dataset=w.dataset,
        batch_size=ex["batch_size"],
        device=ex["device"],
        max_tokens=ex["max_tokens"],
        image_backend=ex["image_backend"],
        atol=cond["atol"],
        row_sum_atol=cond["row_sum_atol"],
        dump_inputs=ex["dump_inputs"],
        dump_path=snakemake.output.dump,
        overlap=ex["overlap"],
        batch_by_length=ex["batch_by_length"],
    )
