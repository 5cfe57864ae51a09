"""rule measure → rollout_equality.measure.measure, then its records' per-layer rates
(rollout_equality.reporting.suite_tables.summarise_records)"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.runtime.prelude import prelude

prelude(snakemake.threads, snakemake.params.extraction["code_path"])  # offline, threads, CPU code path: first

from rollout_equality.acquire.models import read_model_info
from rollout_equality.config.settings import Condition, Extraction, HeadSettings, from_section
from rollout_equality.measure import Outputs, measure
from rollout_equality.reporting.suite_tables import summarise_records
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    out = snakemake.output
    measure(
        read_model_info(snakemake.input.model),
        Path(snakemake.input.data).parent,
        Outputs(out.records, out.rollout, out.heads, out.heads_rollout, out.dump),
        model=snakemake.wildcards.model,
        dataset=snakemake.wildcards.dataset,
        extraction=from_section(Extraction, snakemake.params.extraction),
        condition=from_section(Condition, snakemake.params.condition),
        heads=HeadSettings.from_config(snakemake.params.analysis),
        inputs=snakemake.params.inputs,
    )
    summarise_records(out.records, out.summary)
