"""The one loader of config.yaml: files merged, checked against the schema, every default filled in.

The schema (``config.schema.yaml``) states every key, default and allowed value; this module is the one place that
fills the defaults in (:func:`checked`, jsonschema's validation extended to set each ``default`` it passes). A run's
whole config goes through :func:`validated` (the workflow's common.smk, the command line, the documents); a part of
one (an overlay alone, no file at all, one entry of a section) through :func:`partial_config` and
:func:`with_defaults`.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

from rollout_equality.config.checks import check_references
from rollout_equality.config.schema import node


def validated(config: dict[str, Any]) -> dict[str, Any]:
    """A whole config (every section a workflow run requires) checked against the schema, its defaults filled in,
    and its references checked (:func:`rollout_equality.config.checks.check_references`): a new dict. Raises
    ``ValueError`` naming the first key the schema rejects, or the first reference to nothing."""
    out = checked((), "config", config)
    check_references(out)
    return out


def load_config(paths: list[str]) -> dict:
    """config.yaml files merged in order (as Snakemake's ``--configfile`` merges them), checked against the
    schema with its defaults filled in. A whole config (every section a workflow run requires: a project's
    config.yaml) is checked as a run checks it, its references too; anything less (an overlay alone, or no file at
    all) is completed from the schema's defaults (:func:`partial_config`)."""
    import yaml

    config: dict = {}
    for path in paths:
        merge(config, yaml.safe_load(Path(path).read_text()) or {})
    if not all(section in config for section in node("required")):
        return partial_config(config)
    return validated(config)


def merge(config: dict[str, Any], overlay: dict[str, Any]) -> dict[str, Any]:
    """``overlay`` merged into ``config`` in place, as Snakemake merges ``--configfile`` overlays: a mapping merged key by
    key (recursively), anything else (a list included) replacing what was there. Returns ``config``."""
    for key, value in overlay.items():
        if isinstance(value, dict):
            below = config.get(key)
            config[key] = merge(below if isinstance(below, dict) else {}, value)
        else:
            config[key] = value
    return config


def with_defaults(section: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One entry of a config section (e.g. ``datasets``) checked against the schema and completed with its
    defaults, as :func:`validated` completes a run's config; for library calls from the command line.

    Raises ``ValueError`` naming the entry and what the schema rejects.
    """
    return checked(("properties", section, "additionalProperties"), f"{section} entry {name!r}", entry)


def partial_config(config: dict[str, Any]) -> dict[str, Any]:
    """A config that is not a project's whole config.yaml (an overlay alone, or ``{}``: no config file at all) as the
    command line reads it: each section it gives checked against the schema, the sections with a default for every
    key (``condition``, ``baseline``, ``extraction``) filled in from the schema, and ``models``, ``datasets`` and
    ``suites`` empty where it gives none. Raises ``ValueError`` naming what the schema rejects."""
    out = checked((), "config", config, required=False)
    for section in ("models", "datasets", "suites"):
        out.setdefault(section, {})
    return out


def checked(keys: tuple[str, ...], what: str, value: Any, required: bool = True) -> Any:
    """``value`` checked against the schema's node at ``keys`` (a path into config.schema.yaml) and completed with
    its defaults: the library's entry points check their arguments with the schema, which states every
    enumeration and every "exactly one source" rule once. ``required=False``: the node's own required keys may be
    missing (its subsections' still may not). Raises ``ValueError`` starting with ``what``."""
    import jsonschema

    sub = {**node(*keys), "$defs": node("$defs")}
    if not required:
        sub.pop("required", None)
    validator_class = jsonschema.validators.validator_for(sub)

    def set_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for key, prop in properties.items():
                if "default" in prop:
                    instance.setdefault(key, copy.deepcopy(prop["default"]))
        yield from validator_class.VALIDATORS["properties"](validator, properties, instance, subschema)

    filling = jsonschema.validators.extend(validator_class, {"properties": set_defaults})
    value = copy.deepcopy(value)
    errors = sorted(filling(sub).iter_errors(value), key=lambda e: list(e.path))
    if errors:
        where = "/".join(map(str, errors[0].path)) or ("the entry" if keys else "the top level")
        raise ValueError(f"{what}: {where}: {_message(errors[0])}")
    return value


def _message(error) -> str:
    """jsonschema's message, or for a choice of one key among several ("exactly one source"), which keys."""
    schema, instance = error.schema, error.instance
    one_key = [alt.get("required") for alt in schema.get("oneOf", [])]
    if error.validator == "oneOf" and one_key and all(r and len(r) == 1 for r in one_key):
        keys = [r[0] for r in one_key]
    elif error.validator in ("minProperties", "maxProperties") and schema.get("maxProperties") == 1:
        keys = list(schema.get("properties", {}))
    else:
        return error.message
    given = [k for k in keys if k in instance] if isinstance(instance, dict) else instance
    return f"give exactly one of {', '.join(keys)}; got {given or 'none'}"
