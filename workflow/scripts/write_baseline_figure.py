"""rule write_baseline_figure → rollout_equality.figures.write_baseline_figure"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.figures import write_baseline_figure
from rollout_equality.io import logging_to
from rollout_equality.tables import read_baseline

with logging_to(snakemake.log[0]):
    write_baseline_figure(
        read_baseline(snakemake.input.csv), snakemake.params.claim, snakemake.output.pdf, snakemake.output.png
    )
