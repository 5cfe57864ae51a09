"""rule random_baseline → rollout_equality.baseline.random_baseline"""

import os

os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)  # before numba is imported

import _checkout  # noqa: F401,E402  (this checkout's library first)

from rollout_equality.baseline import random_baseline  # noqa: E402
from rollout_equality.formats import write_csv  # noqa: E402
from rollout_equality.io import logging_to  # noqa: E402

with logging_to(snakemake.log[0]):
    p = snakemake.params
    table = random_baseline(p.ns, p.trials, p.seed, atol=p.atol, chunk_size=p.chunk_size, workers=snakemake.threads)
    write_csv(table, snakemake.output.csv)
