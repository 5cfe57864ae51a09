"""rule build_paper → rollout_equality.reporting.paper.build_paper"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.paper import build_paper
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    build_paper(snakemake.input.main, snakemake.output[0], snakemake.wildcards.suite)
