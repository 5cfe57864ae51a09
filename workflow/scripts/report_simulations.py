"""rule report_simulations → rollout_equality.studies.dynamics.report.report_simulations"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.dynamics.report import report_simulations

with logging_to(snakemake.log[0]):
    report_simulations(dict(snakemake.input.items()), dict(snakemake.output.items()))
