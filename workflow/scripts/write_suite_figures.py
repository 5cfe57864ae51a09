"""rule write_suite_figures → rollout_equality.reporting.figures.write_suite_figures"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.figures import write_suite_figures
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_suite_figures(
        list(snakemake.input.records),
        list(snakemake.input.rollout),
        list(snakemake.input.dumps),
        dict(snakemake.output.items()),
        kinds=snakemake.params.kinds,
        claims=snakemake.params.claims,
        heatmaps=snakemake.params.heatmaps,
    )
