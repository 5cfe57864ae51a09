"""rule random_baseline → rollout_equality.baseline.random_baseline"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.baseline import random_baseline
from rollout_equality.formats import write_csv
from rollout_equality.io import logging_to

with logging_to(snakemake.log[0]):
    p = snakemake.params
    table = random_baseline(p.ns, p.trials, p.seed, atol=p.atol, chunk_size=p.chunk_size, workers=snakemake.threads)
    write_csv(table, snakemake.output.csv)
