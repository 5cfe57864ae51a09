"""rule tables → rollout_equality.tables.write_suite_tables"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)
from rollout_equality.io import logging_to
from rollout_equality.tables import write_suite_tables

with logging_to(snakemake.log[0]):
    write_suite_tables(list(snakemake.input.records), snakemake.input.baseline,
                       Path(snakemake.output.claims).parent, Path(snakemake.output.tex_claims).parent,
                       metrics_files=list(snakemake.input.metrics))
