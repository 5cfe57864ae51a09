"""rule train_supervision → rollout_equality.studies.supervision.train.train"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.params.threads, snakemake.params.code_path)  # offline, threads, code path: before the library

from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.supervision.train import train

with logging_to(snakemake.log[0]):
    inp = snakemake.input
    train(
        snakemake.wildcards.objective,
        Path(inp.init).parent,
        Path(inp.train).parent,
        Path(inp.test).parent,
        snakemake.params.training,
        snakemake.params.vit,
        int(snakemake.wildcards.seed),
        Path(snakemake.output.weights).parent,
        snakemake.params.threads,
        snakemake.params.code_path,
    )
