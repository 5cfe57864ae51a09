"""rule train_ftt → rollout_equality.tabular.ftt.train_ftt"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.params.training["threads"], snakemake.params.training["code_path"])  # offline, threads, code path

from rollout_equality.runtime.device import resolve_device
from rollout_equality.runtime.files import logging_to
from rollout_equality.tabular.ftt import train_ftt

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
        code_path=t["code_path"],
        published=snakemake.params.published,
    )
