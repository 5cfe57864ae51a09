"""rule write_head_tables → rollout_equality.reporting.head_tables.write_head_tables"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads)  # offline, thread counts: before the library's imports

from rollout_equality.reporting.head_tables import write_head_tables
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    inp = snakemake.input
    write_head_tables(
        list(inp.records),
        list(inp.rollout),
        list(inp.heads),
        list(inp.heads_rollout),
        dict(snakemake.output.items()),
        kinds=snakemake.params.kinds,
    )
