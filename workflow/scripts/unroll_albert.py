"""rule unroll_albert → rollout_equality.studies.dynamics.albert.unroll_albert"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.params.threads, snakemake.params.code_path)  # offline, extraction.threads and code_path: first

from rollout_equality.acquire.models import read_model_info
from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.dynamics.albert import unroll_albert

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
