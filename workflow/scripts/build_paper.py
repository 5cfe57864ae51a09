"""rule build_paper → rollout_equality.paper.build_paper"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.io import logging_to
from rollout_equality.paper import build_paper

with logging_to(snakemake.log[0]):
    build_paper(snakemake.input.main, snakemake.output[0], snakemake.wildcards.suite)
