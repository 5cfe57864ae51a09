"""The schema of config.yaml (``config.schema.yaml``, package data of this library) as the library reads it: the
enumerations.

The schema travels with the library (``importlib.resources``), so an installed wheel has it; the workflow validates
its config against the same file (workflow/rules/common.smk). Kept apart from :mod:`rollout_equality.config.checks` (which
validates with jsonschema in the controlling process): compute jobs read the allowed values of their arguments from
here, with PyYAML only.
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


def with_section_defaults(config: dict) -> dict:
    """``config`` (a config file as written) with the sections whose every key has a default (those with a default
    themselves: ``condition``, ``baseline``, ``extraction``) completed from the schema's defaults, a key the file
    gives kept. PyYAML only: for scripts that run where neither jsonschema nor Snakemake is installed (a GPU
    machine's own Python); a workflow run and the command line validate the whole config instead."""
    out = dict(config)
    for section, spec in node("properties").items():
        if "default" in spec:
            keys = spec["properties"]
            given = out.get(section) or {}
            out[section] = {**{k: v["default"] for k, v in keys.items() if "default" in v}, **given}
    return out
