"""rule train_ftt → rollout_equality.ftt.train_ftt"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.job import prelude

prelude(snakemake.params.training["threads"], snakemake.params.training["code_path"])  # offline, threads, code path

from rollout_equality.compute import resolve_device
from rollout_equality.ftt import train_ftt
from rollout_equality.io import logging_to

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
