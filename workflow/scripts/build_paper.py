"""rule build_paper → rollout_equality.paper.build_paper"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.io import logging_to
from rollout_equality.paper import build_paper

with logging_to(snakemake.log[0]):
    build_paper(Path(snakemake.input.main).parent, snakemake.wildcards.suite)
