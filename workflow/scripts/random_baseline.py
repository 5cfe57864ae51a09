"""rule random_baseline → rollout_equality.baseline.random_baseline"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.baseline import random_baseline
from rollout_equality.formats import write_csv
from rollout_equality.io import logging_to
from rollout_equality.settings import Baseline, Condition, from_section

with logging_to(snakemake.log[0]):
    b = from_section(Baseline, snakemake.params.baseline)
    atol = from_section(Condition, snakemake.params.condition).atol
    table = random_baseline(b.ns, b.trials, b.seed, atol=atol, chunk_size=b.chunk_size, workers=snakemake.threads)
    write_csv(table, snakemake.output.csv)
