"""rule fetch_table → rollout_equality.acquire.tables.fetch_table"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.acquire.tables import fetch_table
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    fetch_table(snakemake.wildcards.tabular, snakemake.params.spec, snakemake.params.cache, snakemake.output[0])
