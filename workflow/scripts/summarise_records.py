"""rule summarise_records → rollout_equality.tables.layer_rates"""

import _checkout  # noqa: F401  (this checkout's library first)
from rollout_equality.io import logging_to
from rollout_equality.records import read_records
from rollout_equality.tables import layer_rates, write_csv

with logging_to(snakemake.log[0]):
    write_csv(layer_rates(read_records(snakemake.input[0])), snakemake.output[0])
