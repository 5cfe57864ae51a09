"""rule prepare_model → rollout_equality.acquire.models.prepare_model"""

from pathlib import Path

import _checkout  # noqa: F401  (this checkout's library first)

from rollout_equality.acquire.models import prepare_model
from rollout_equality.runtime.files import logging_to

with logging_to(snakemake.log[0]):
    out = Path(snakemake.output[0])
    prepare_model(snakemake.wildcards.model, snakemake.params.spec, out.parent, out)
