"""The schema of config.yaml (workflow/schemas/config.schema.yaml) as the library reads it: the enumerations.

Kept apart from :mod:`rollout_equality.config` (which validates with jsonschema in the controlling process):
compute jobs read the allowed values of their arguments from here, with PyYAML only.
"""

from __future__ import annotations

import functools
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
"""The schema of config.yaml, in the checkout this library belongs to."""
CONFIG = SCHEMA.parents[2] / "config.yaml"
"""The checkout's config.yaml (the command line's settings when no ``--configfile`` is given)."""


@functools.cache
def _schema() -> dict:
    import yaml

    return yaml.safe_load(SCHEMA.read_text())


def node(*keys: str):
    """The schema's node at ``keys`` (a path into the schema)."""
    out = _schema()
    for key in keys:
        out = out[key]
    return out


@functools.cache
def choices(*keys: str) -> tuple:
    """The values the schema allows at ``keys`` (a path into the schema, e.g. ``("$defs", "binary_head")``): its
    ``enum``. Enumerations are stated there only; the library's checks of its arguments read them from it."""
    return tuple(node(*keys)["enum"])
