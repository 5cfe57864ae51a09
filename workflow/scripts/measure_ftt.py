"""rule measure_ftt → rollout_equality.tabular.ftt.measure_ftt, then its records' per-layer rates
(rollout_equality.reporting.suite_tables.summarise_records)"""

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.params.training["threads"], snakemake.params.training["code_path"])  # offline, threads, code path

from rollout_equality.config.settings import Condition, HeadSettings, from_section
from rollout_equality.reporting.suite_tables import summarise_records
from rollout_equality.runtime.device import resolve_device
from rollout_equality.runtime.files import logging_to
from rollout_equality.tabular.ftt import measure_ftt

with logging_to(snakemake.log[0]):
    inp, out = snakemake.input, snakemake.output
    measure_ftt(
        inp.data,
        inp.manifest,
        inp.model,
        inp.metrics,
        out.records,
        out.rollout,
        n_inputs=snakemake.params.n_inputs,
        device=resolve_device(snakemake.params.training["device"]),
        threads=snakemake.params.training["threads"],
        condition=from_section(Condition, snakemake.params.condition),
        heads=HeadSettings.from_config(snakemake.params.analysis),
        heads_path=out.heads,
        heads_rollout_path=out.heads_rollout,
    )
    summarise_records(out.records, out.summary)
