"""rule check_sources → rollout_equality.sources.run"""

import sys

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.io import logging_to
from rollout_equality.sources import run

with logging_to(snakemake.log[0]):
    run(snakemake.config, snakemake.params.suites, snakemake.params.cache, snakemake.output[0], echo=sys.__stderr__)
