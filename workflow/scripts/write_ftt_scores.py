"""rule write_ftt_scores → rollout_equality.reporting.suite_tables.write_ftt_scores"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.suite_tables import write_ftt_scores
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_ftt_scores(list(snakemake.input), snakemake.output[0])
