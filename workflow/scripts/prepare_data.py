"""rule prepare_data → rollout_equality.acquire.data.prepare_data"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.acquire.data import prepare_data
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    prepare_data(snakemake.wildcards.dataset, snakemake.params.spec, Path(snakemake.output[0]).parent)
