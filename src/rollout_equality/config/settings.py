"""Sections of config.yaml that compute steps take whole, as typed records.

A rule passes the validated section (``params: extraction=config["extraction"]``), its script builds the record
with :func:`from_section`, and the library reads its fields: no script re-lists a section's keys, and the library
holds no default of its own for them (the schema states each default once; Snakemake's ``validate`` and
:func:`rollout_equality.cli.load_config` fill them in). tests/config/test_settings.py keeps each record's fields equal to
its section's properties in the schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, TypeVar


@dataclasses.dataclass(frozen=True)
class Condition:
    """``condition:``: the tolerances of the condition test (rollout_equality.condition.dobrushin)."""

    atol: float
    row_sum_atol: float


@dataclasses.dataclass(frozen=True)
class Extraction:
    """``extraction:``: how attention is read (rule measure)."""

    device: str
    threads: int
    code_path: str
    batch_size: int
    max_tokens: int
    dump_inputs: int
    image_backend: str
    overlap: bool | str
    batch_by_length: bool


@dataclasses.dataclass(frozen=True)
class Baseline:
    """``baseline:``: the random baseline (rule random_baseline)."""

    seed: int
    trials: int
    ns: tuple[int, ...]
    chunk_size: int


SECTIONS = {"condition": Condition, "extraction": Extraction, "baseline": Baseline}
"""config.yaml's section of each record."""

S = TypeVar("S", Condition, Extraction, Baseline)


def from_section(cls: type[S], values: Mapping[str, Any]) -> S:
    """The record ``cls`` of a validated config section. Raises ``ValueError`` naming the section and the keys that
    are missing or unknown (a config that was not validated against the schema, or a schema the record does not
    follow)."""
    section = next(name for name, c in SECTIONS.items() if c is cls)
    names = [f.name for f in dataclasses.fields(cls)]
    missing, unknown = [k for k in names if k not in values], sorted(set(values) - set(names))
    if missing or unknown:
        raise ValueError(
            f"config section {section!r}: missing {missing}, unknown {unknown}; validate the config against "
            "src/rollout_equality/config/config.schema.yaml first (a workflow run and rollout_equality.cli.load_config do)"
        )
    kwargs = {k: values[k] for k in names}
    if cls is Baseline:
        kwargs["ns"] = tuple(kwargs["ns"])
    return cls(**kwargs)
