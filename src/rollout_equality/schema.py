"""The schema of config.yaml (workflow/schemas/config.schema.yaml) as the library reads it: the enumerations.

Kept apart from :mod:`rollout_equality.config` (which validates with jsonschema in the controlling process):
compute jobs read the allowed values of their arguments from here, with PyYAML only.
"""

from __future__ import annotations

import functools
from pathlib import Path

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
"""The schema of config.yaml, in the checkout this library belongs to."""


@functools.cache
def choices(*keys: str) -> tuple:
    """The values the schema allows at ``keys`` (a path into the schema, e.g. ``("$defs", "binary_head")``): its
    ``enum``. Enumerations are stated there only; the library's checks of its arguments read them from it."""
    import yaml

    node = yaml.safe_load(SCHEMA.read_text())
    for key in keys:
        node = node[key]
    return tuple(node["enum"])
