"""rule write_baseline_figure → rollout_equality.reporting.figures.write_baseline_figure"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.figures import write_baseline_figure
from rollout_equality.reporting.suite_tables import read_baseline
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_baseline_figure(
        read_baseline(snakemake.input.csv), snakemake.params.claim, snakemake.output.pdf, snakemake.output.png
    )
