"""rule report_albert → rollout_equality.dynamics_report.write_albert_reports"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.dynamics_report import write_albert_reports
from rollout_equality.io import logging_to

with logging_to(snakemake.log[0]):
    out = snakemake.output
    write_albert_reports(snakemake.input.records, snakemake.input.info, out.steps, out.tex, [out.pdf, out.png])
