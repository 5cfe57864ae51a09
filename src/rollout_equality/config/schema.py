"""The schema of config.yaml (``config.schema.yaml``, package data of this library) as the library reads it: its
nodes, enumerations and defaults (:mod:`rollout_equality.config.load` fills a config's defaults in).

The schema travels with the library (``importlib.resources``), so an installed wheel has it; the workflow's config is
checked against the same file (:mod:`rollout_equality.config.load`). Kept apart from that loader (jsonschema, in the
controlling process): compute jobs read the allowed values and defaults of their arguments from here, with PyYAML
only.
"""

from __future__ import annotations

import functools
from importlib import resources

SCHEMA = resources.files("rollout_equality.config") / "config.schema.yaml"
"""The schema of config.yaml, package data of this library (a file on disk for any ordinary install)."""


@functools.cache
def _schema() -> dict:
    import yaml

    return yaml.safe_load(SCHEMA.read_text(encoding="utf-8"))


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


def default(section: str, key: str):
    """The schema's default of ``section.key`` (e.g. ``("condition", "atol")``): defaults are stated there only."""
    return node("properties", section, "properties", key)["default"]
