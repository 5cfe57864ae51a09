"""rule prepare_tabular → rollout_equality.tabular.prepare.prepare_tabular"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.acquire.tables import read_table
from rollout_equality.runtime.files import logging_to
from rollout_equality.tabular.prepare import prepare_tabular

with logging_to(snakemake.log[0]):
    raw, target = read_table(snakemake.input[0])
    spec = snakemake.params.spec
    split = spec["split"]
    prepare_tabular(
        snakemake.wildcards.tabular,
        spec,
        raw,
        target,
        snakemake.output.data,
        snakemake.output.manifest,
        seed=split["seed"],
        test=split["test"],
        val=split["val"],
        recipe=spec["recipe"],
    )
