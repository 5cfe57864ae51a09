"""rule write_baseline_latex → rollout_equality.reporting.suite_tables.write_baseline_latex"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.suite_tables import read_baseline, write_baseline_latex
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_baseline_latex(read_baseline(snakemake.input.csv), snakemake.output.tex)
