"""Sections of config.yaml that compute steps take whole, as typed records.

``condition``, ``extraction`` and ``baseline`` are :class:`Condition`, :class:`Extraction` and :class:`Baseline`;
``analysis``, as one run resolves it, is :class:`HeadSettings` (with :data:`FUSIONS`, the head fusions).

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

from rollout_equality.config.schema import choices


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


FUSIONS = choices("$defs", "fusions", "items")
"""The head fusions, in table order (the schema's); ``mean`` is the paper's (the head-averaged records)."""

PAPER_FUSION = "mean"
"""The fusion of the paper: the heads' average, whose records are the layer and rollout records."""


@dataclasses.dataclass(frozen=True)
class HeadSettings:
    """``analysis:`` as one run resolves it (:func:`rollout_equality.config.checks.run_analysis`): what is measured
    beyond the head-averaged records. Where a list of fusions is checked (config.yaml's through the schema, a command
    line's ``--fusions`` and the library's calls through this record)."""

    per_head: bool = False
    """Records of every head's own attention."""

    fusions: tuple[str, ...] = (PAPER_FUSION,)
    """The fusions measured; ``mean`` (the head-averaged records) always, the others in the heads file."""

    def __post_init__(self) -> None:
        fusions = tuple(self.fusions)
        problems = [f"{f!r} is not one of {', '.join(FUSIONS)}" for f in fusions if f not in FUSIONS]
        if len(set(fusions)) != len(fusions):
            problems.append("a name is given twice (non-unique)")
        if PAPER_FUSION not in fusions:
            problems.append(f"{PAPER_FUSION} is missing")
        if problems:
            raise ValueError(
                f"give distinct fusions among {', '.join(FUSIONS)}, {PAPER_FUSION} among them (the head-averaged "
                f"records, always measured); got {list(fusions)}: {'; '.join(problems)}"
            )
        object.__setattr__(self, "fusions", fusions)

    @property
    def extra_fusions(self) -> tuple[str, ...]:
        """The fusions other than ``mean``, in :data:`FUSIONS` order: those the heads file holds."""
        return tuple(f for f in FUSIONS if f in self.fusions and f != PAPER_FUSION)

    @property
    def on(self) -> bool:
        """Whether anything beyond the head-averaged records is measured (then the extractor keeps every head)."""
        return self.per_head or bool(self.extra_fusions)

    @classmethod
    def from_config(cls, values: Mapping[str, Any] | None) -> "HeadSettings":
        """From a resolved ``{per_head, fusions}`` (:func:`rollout_equality.config.checks.run_analysis`)."""
        values = values or {}
        return cls(per_head=bool(values.get("per_head", False)), fusions=tuple(values.get("fusions", [PAPER_FUSION])))


OFF = HeadSettings()
"""The head-averaged records alone."""
