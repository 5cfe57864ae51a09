"""rule random_baseline → rollout_equality.condition.baseline.random_baseline"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.condition.baseline import random_baseline
from rollout_equality.config.settings import Baseline, Condition, from_section
from rollout_equality.reporting.writers import write_csv
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    b = from_section(Baseline, snakemake.params.baseline)
    atol = from_section(Condition, snakemake.params.condition).atol
    table = random_baseline(b.ns, b.trials, b.seed, atol=atol, chunk_size=b.chunk_size, workers=snakemake.threads)
    write_csv(table, snakemake.output.csv)
