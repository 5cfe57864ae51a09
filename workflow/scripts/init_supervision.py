"""rule init_supervision → rollout_equality.studies.supervision.train.write_init"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.params.threads, snakemake.params.code_path)  # offline, threads, code path: before the library

from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.supervision.train import write_init

with logging_to(snakemake.log[0]):
    out = Path(snakemake.output.weights).parent
    write_init(
        snakemake.params.vit,
        int(snakemake.wildcards.seed),
        out,
        snakemake.params.threads,
        snakemake.params.code_path,
    )
