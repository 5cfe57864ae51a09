"""The configuration as the workflow sees it: loaded through rollout_equality.config.load, which fills in the schema's
defaults.

Library functions read every setting from the config they are given (the schema holds the
defaults, not the library). Tests that build a section by hand take it through :func:`validated`,
the way the workflow loads a run's config.
"""

import copy

import yaml
from conftest import REPO

from rollout_equality.config import load, schema

SCHEMA = schema.SCHEMA  # the library's package data, which the workflow validates against
TINY = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def validated(**sections) -> dict:
    """The tiny config with ``sections`` replacing its top-level keys, checked against the schema and with its defaults
    filled in by the loader (its references are not checked: a section may come from another config)."""
    config = copy.deepcopy(TINY)
    config.update(copy.deepcopy(sections))
    return load.checked((), "config", config)


def _records():
    from rollout_equality.config.settings import Condition, Extraction, from_section

    config = validated()
    return from_section(Condition, config["condition"]), from_section(Extraction, config["extraction"])


CONDITION, EXTRACTION = _records()
"""The tiny config's ``condition`` and ``extraction`` sections, as the workflow's scripts pass them."""
