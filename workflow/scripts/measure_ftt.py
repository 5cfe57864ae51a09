"""rule measure_ftt → rollout_equality.ftt.measure_ftt"""

import os

os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)

import _checkout  # noqa: F401,E402  (this checkout's library first)
import torch  # noqa: E402

from rollout_equality.extract import resolve_device  # noqa: E402
from rollout_equality.ftt import measure_ftt  # noqa: E402
from rollout_equality.io import logging_to  # noqa: E402

torch.set_num_threads(snakemake.threads)
with logging_to(snakemake.log[0]):
    cond, inp, out = snakemake.params.condition, snakemake.input, snakemake.output
    measure_ftt(
        inp.data,
        inp.manifest,
        inp.model,
        inp.metrics,
        out.records,
        out.rollout,
        n_inputs=snakemake.params.n_inputs,
        device=resolve_device(snakemake.params.device),
        atol=cond["atol"],
        row_sum_atol=cond["row_sum_atol"],
    )
