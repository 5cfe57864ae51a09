"""rule prepare_model → rollout_equality.models.prepare_model"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.io import logging_to
from rollout_equality.models import prepare_model

with logging_to(snakemake.log[0]):
    out = Path(snakemake.output[0])
    prepare_model(snakemake.wildcards.model, snakemake.params.spec, out.parent, out)
