"""rule write_ftt_ablation → rollout_equality.reporting.ftt_ablation.write_ftt_ablation"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.ftt_ablation import write_ftt_ablation
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    write_ftt_ablation(
        list(snakemake.input.records),
        list(snakemake.input.metrics),
        snakemake.params.settings,
        dict(snakemake.output.items()),
        claim=snakemake.params.claim,
    )
