"""rule write_ftt_scores → rollout_equality.tables.write_ftt_scores"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.io import logging_to
from rollout_equality.tables import write_ftt_scores

with logging_to(snakemake.log[0]):
    write_ftt_scores(list(snakemake.input), snakemake.output[0])
