"""rule write_baseline_latex → rollout_equality.tables.write_baseline_latex"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.io import logging_to
from rollout_equality.tables import read_baseline, write_baseline_latex

with logging_to(snakemake.log[0]):
    write_baseline_latex(read_baseline(snakemake.input.csv), snakemake.output.tex)
