"""rule simulate_dynamics → rollout_equality.dynamics_report.write_simulations"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.dynamics_report import write_simulations
from rollout_equality.io import logging_to

with logging_to(snakemake.log[0]):
    write_simulations(snakemake.params.specs, snakemake.params.seed, Path(snakemake.output[0]).parent)
