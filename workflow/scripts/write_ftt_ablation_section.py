"""rule write_ftt_ablation_section → rollout_equality.reporting.ftt_ablation.ablation_section"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.ftt_ablation import ablation_section
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    files = list(snakemake.input)
    ablation_section(
        snakemake.output[0],
        dict(zip(("tex", "pdf", "summary"), files)) if files else None,
        snakemake.params.table,
    )
