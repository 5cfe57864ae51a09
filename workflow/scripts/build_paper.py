"""rule build_paper → rollout_equality.figures.build_paper"""

import _checkout  # noqa: F401  (this checkout's library first)
from rollout_equality.figures import build_paper
from rollout_equality.io import logging_to

with logging_to(snakemake.log[0]):
    build_paper("paper", snakemake.wildcards.suite)
