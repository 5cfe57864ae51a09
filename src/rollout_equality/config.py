"""Checks of config.yaml that its JSON schema cannot express: names that refer to other entries.

The schema (``workflow/schemas/config.schema.yaml``) checks every key, type and range and fills in
defaults; :func:`check_references` then checks that every experiment names a model and a data set
defined in the config, of the same modality, that every tabular suite names defined tables, and
that the dynamics study's ALBERT runs read text. Each error names the entry and what to fix.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCHEMA = Path(__file__).resolve().parents[2] / "workflow" / "schemas" / "config.schema.yaml"
"""The schema of config.yaml, in the checkout this library belongs to."""


def check_references(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` naming the first experiment, table or ALBERT run that refers to nothing valid."""
    models, datasets = config["models"], config["datasets"]

    def experiment(where: str, exp: dict[str, str], modality: str | None = None) -> None:
        model, dataset = exp["model"], exp["dataset"]
        if model not in models:
            raise ValueError(f"{where}: model {model!r} is not defined under models: in the config")
        if dataset not in datasets:
            raise ValueError(f"{where}: data set {dataset!r} is not defined under datasets: in the config")
        reads, holds = models[model]["modality"], datasets[dataset]["modality"]
        if reads != holds:
            raise ValueError(f"{where}: model {model!r} reads {reads} but data set {dataset!r} holds {holds}")
        if modality is not None and reads != modality:
            raise ValueError(f"{where}: the model {model!r} and data set {dataset!r} are {reads}; it needs {modality}")

    for suite, experiments in config["suites"].items():
        for exp in experiments:
            experiment(f"suite {suite!r}", exp)
    tables = config["tabular"]["datasets"]
    for suite, names in config["tabular"]["suites"].items():
        for name in names:
            if name not in tables:
                raise ValueError(f"tabular suite {suite!r}: table {name!r} is not defined under tabular.datasets")
    for suite, exp in config["dynamics"]["albert"]["suites"].items():
        experiment(f"dynamics.albert.suites.{suite} (ALBERT)", exp, modality="text")


def with_defaults(section: str, name: str, entry: dict[str, Any]) -> dict[str, Any]:
    """One entry of a config section (e.g. ``datasets``) checked against the schema and completed with its
    defaults, as Snakemake's ``validate`` completes a run's config; for library calls from the command line.

    Raises ``ValueError`` naming the entry and what the schema rejects.
    """
    import copy

    import jsonschema
    import yaml

    schema = yaml.safe_load(SCHEMA.read_text())
    sub = {**schema["properties"][section]["additionalProperties"], "$defs": schema.get("$defs", {})}
    validator_class = jsonschema.validators.validator_for(sub)

    def set_defaults(validator, properties, instance, subschema):
        if isinstance(instance, dict):
            for key, prop in properties.items():
                if "default" in prop:
                    instance.setdefault(key, copy.deepcopy(prop["default"]))
        yield from validator_class.VALIDATORS["properties"](validator, properties, instance, subschema)

    filling = jsonschema.validators.extend(validator_class, {"properties": set_defaults})
    entry = copy.deepcopy(entry)
    errors = sorted(filling(sub).iter_errors(entry), key=lambda e: list(e.path))
    if errors:
        where = "/".join(map(str, errors[0].path)) or "the entry"
        raise ValueError(f"{section} entry {name!r}: {where}: {errors[0].message}")
    return entry
