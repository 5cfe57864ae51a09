"""rule measure → rollout_equality.measure.measure"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.io import logging_to
from rollout_equality.measure import measure, read_model_info

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
