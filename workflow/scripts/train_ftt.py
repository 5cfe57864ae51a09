"""rule train_ftt → rollout_equality.ftt.train_ftt"""

import os

os.environ["NUMBA_NUM_THREADS"] = str(snakemake.threads)

import _checkout  # noqa: F401,E402  (this checkout's library first)
import torch  # noqa: E402

from rollout_equality.extract import resolve_device  # noqa: E402
from rollout_equality.ftt import train_ftt  # noqa: E402
from rollout_equality.io import logging_to  # noqa: E402

torch.set_num_threads(snakemake.threads)
with logging_to(snakemake.log[0]):
    t, inp, out = snakemake.params.training, snakemake.input, snakemake.output
    train_ftt(
        inp.data,
        inp.manifest,
        out.model,
        out.metrics,
        seed=int(snakemake.wildcards.seed),
        max_epochs=t["max_epochs"],
        patience=t["patience"],
        batch_size=t["batch_size"],
        binary_head=snakemake.params.binary_head,
        device=resolve_device(t["device"]),
        published=snakemake.params.published,
    )
