"""rule write_suite_tables → rollout_equality.reporting.suite_tables.write_suite_tables"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.suite_tables import write_suite_tables
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_suite_tables(
        list(snakemake.input.records),
        list(snakemake.input.rollout),
        snakemake.input.baseline,
        dict(snakemake.output.items()),
        snakemake.params.claims,
        metrics_files=list(snakemake.input.metrics),
        ablation_csv=snakemake.input.ablation[0] if snakemake.input.ablation else None,
        not_run=snakemake.params.not_run,
        ablation_claim=snakemake.params.ablation_claim,
    )
