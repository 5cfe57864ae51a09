"""rule check_sources → rollout_equality.acquire.sources.run"""

import sys

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.acquire.sources import run
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    run(snakemake.config, snakemake.params.suites, snakemake.params.cache, snakemake.output[0], echo=sys.__stderr__)
