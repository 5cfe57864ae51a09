"""The configuration as the workflow sees it: validated against the schema, which fills in defaults.

Library functions read every setting from the config they are given (the schema holds the
defaults, not the library). Tests that build a section by hand take it through :func:`validated`,
the way Snakemake's ``validate`` does for a run.
"""

import copy

import yaml
from conftest import REPO
from snakemake.utils import validate

from rollout_equality.config import schema

SCHEMA = schema.SCHEMA  # the library's package data, which the workflow validates against
TINY = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def validated(**sections) -> dict:
    """The tiny config with ``sections`` replacing its top-level keys, validated and with defaults filled in."""
    config = copy.deepcopy(TINY)
    config.update(copy.deepcopy(sections))
    validate(config, str(SCHEMA))
    return config


def _records():
    from rollout_equality.config.settings import Condition, Extraction, from_section

    config = validated()
    return from_section(Condition, config["condition"]), from_section(Extraction, config["extraction"])


CONDITION, EXTRACTION = _records()
"""The tiny config's ``condition`` and ``extraction`` sections, as the workflow's scripts pass them."""
