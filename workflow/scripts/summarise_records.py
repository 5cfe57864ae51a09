"""rule summarise_records → rollout_equality.reporting.suite_tables.summarise_records"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.suite_tables import summarise_records
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    summarise_records(snakemake.input[0], snakemake.output[0])
