"""rule unroll_albert → rollout_equality.dynamics.albert.unroll_albert"""

import os

# Compute jobs never reach the hub: models and data were prepared by local rules.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)

import _checkout  # noqa: F401,E402  (this checkout's library first)
import torch  # noqa: E402

from rollout_equality.dynamics.albert import unroll_albert  # noqa: E402
from rollout_equality.io import logging_to  # noqa: E402
from rollout_equality.measure import read_model_info  # noqa: E402

torch.set_num_threads(snakemake.threads)
with logging_to(snakemake.log[0]):
    albert, cond = snakemake.params.albert, snakemake.params.condition
    unroll_albert(
        read_model_info(snakemake.input.model),
        snakemake.input.data,
        snakemake.output.records,
        snakemake.output.info,
        steps=albert["steps"],
        max_tokens=albert["max_tokens"],
        atol=cond["atol"],
        row_sum_atol=cond["row_sum_atol"],
    )
