"""rule summarise_records → rollout_equality.tables.summarise_records"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.io import logging_to
from rollout_equality.tables import summarise_records

with logging_to(snakemake.log[0]):
    summarise_records(snakemake.input[0], snakemake.output[0])
