"""rule simulate_dynamics → rollout_equality.studies.dynamics.report.simulate_dynamics"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.dynamics.report import simulate_dynamics

with logging_to(snakemake.log[0]):
    simulate_dynamics(snakemake.params.specs, snakemake.params.seed, dict(snakemake.output.items()))
