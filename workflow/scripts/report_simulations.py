"""rule report_simulations → rollout_equality.dynamics_report.write_simulation_reports"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.dynamics_report import write_simulation_reports
from rollout_equality.io import logging_to

with logging_to(snakemake.log[0]):
    out = snakemake.output
    write_simulation_reports(Path(snakemake.input[0]).parent, out.summary, out.stability, out.basin, out.sweep,
                             list(out.figures))
