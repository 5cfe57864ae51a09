"""Checks of config.yaml that its JSON schema cannot express: names that refer to other entries.

The schema (``workflow/schemas/config.schema.yaml``) checks every key, type and range and fills in
defaults; :func:`check_references` then checks that every experiment names a model and a data set
defined in the config, of the same modality, that every tabular suite names defined tables, and
that the dynamics study's ALBERT runs read text. Each error names the entry and what to fix.
"""

from __future__ import annotations

from typing import Any


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
