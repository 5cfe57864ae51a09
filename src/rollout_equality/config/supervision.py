"""The supervision study's runs, derived from its config section: model names, their checkpoints, the experiments.

``supervision`` in config.yaml names seeds and objectives; each (objective, seed) is a model
``supervision_<objective>_s<seed>`` and each seed's untrained initialisation ``supervision_init_s<seed>`` (the
control), each a local timm checkpoint folder (:data:`rollout_equality.config.paths.SUPERVISION_CHECKPOINT`) that the
workflow prepares and measures on the study's test digits as it does any model. :func:`study_models` gives their
model entries (as a ``models:`` entry of config.yaml reads), :func:`check_supervision` checks the section's references.
"""

from __future__ import annotations

from typing import Any

from rollout_equality.config.paths import SUPERVISION_CHECKPOINT

CONTROL = "init"
"""The objective name of a seed's untrained initialisation."""


def model_name(objective: str, seed: int) -> str:
    """The model name of one run: ``supervision_<objective>_s<seed>`` (``objective`` ``init`` for the control)."""
    return f"supervision_{objective}_s{seed}"


def runs(section: dict[str, Any]) -> list[tuple[str, int]]:
    """(objective, seed) of every model of the study: each seed's control, then each objective's, seed by seed."""
    return [(objective, seed) for objective in (CONTROL, *section["objectives"]) for seed in section["seeds"]]


def study_models(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The study's models by name, each a ``models:`` entry: a timm image model whose ``local:`` folder is its
    checkpoint. None without a ``supervision`` section."""
    section = config.get("supervision")
    if not section:
        return {}
    return {
        model_name(objective, seed): {
            "backend": "timm",
            "modality": "image",
            "local": SUPERVISION_CHECKPOINT.format(objective=objective, seed=seed),
        }
        for objective, seed in runs(section)
    }


def check_supervision(config: dict[str, Any]) -> None:
    """Raise ``ValueError`` when the study's data sets are not digits of the right split of one file and split, or a
    study model's name is taken under ``models:``."""
    section = config.get("supervision")
    if not section:
        return
    sources = {}
    for key, split in (("train_data", "train"), ("test_data", "test")):
        name = section[key]
        entry = config["datasets"].get(name)
        if entry is None:
            raise ValueError(f"supervision.{key}: data set {name!r} is not defined under datasets: in the config")
        digits = entry["source"].get("digits")
        if digits is None or digits["split"] != split:
            raise ValueError(
                f"supervision.{key}: data set {name!r} must be a `digits` source of split {split!r} "
                f"(source: {{digits: {{..., split: {split}}}}}); got {entry['source']}"
            )
        sources[key] = {k: v for k, v in digits.items() if k != "split"}
    if sources["train_data"] != sources["test_data"]:
        raise ValueError(
            "supervision: train_data and test_data must split the same file the same way (file, sha256, n_test, seed "
            f"equal); got {sources['train_data']} and {sources['test_data']}"
        )
    taken = sorted(set(study_models(config)) & set(config["models"]))
    if taken:
        raise ValueError(f"models: {', '.join(taken)} are the supervision study's model names; rename yours")
