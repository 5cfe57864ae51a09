"""rule report_supervision → rollout_equality.studies.supervision.report.report_supervision"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(1)  # offline, one thread: the k-NN's forward passes are small

from rollout_equality.runtime.files import logging_to
from rollout_equality.studies.supervision.report import report_supervision

with logging_to(snakemake.log[0]):
    inp, par = snakemake.input, snakemake.params
    report_supervision(
        records=list(inp.records),
        heads=list(inp.heads),
        models=list(par.models),
        runs=list(par.runs),
        checkpoints=[Path(p).parent for p in inp.checkpoints],
        train_data=Path(inp.train).parent,
        test_data=Path(inp.test).parent,
        knn=par.knn,
        late_depth=par.late_depth,
        half_width=par.half_width,
        out=dict(snakemake.output.items()),
    )
