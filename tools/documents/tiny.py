"""The tiny configuration of README's Quick start: the command that runs it, stated once (README and .test/config.yaml's
header show it)."""

from __future__ import annotations

CONFIG = ".test/config.yaml"
"""The tiny configuration, relative to the checkout."""
TARGETS = ("offline", "dynamics_offline")
"""What the Quick start's tiny run makes."""
FOLDER = "tiny"
"""Where it runs (git ignores it)."""


def command() -> str:
    """The Quick start's command: the tiny configuration alone, in a folder of its own."""
    return f".venv/bin/snakemake --configfile {CONFIG} --directory {FOLDER} --cores 2 {' '.join(TARGETS)}"


def values() -> dict[str, str]:
    """The ``{name}``s of README.in.md about the tiny run: its command (which rules it runs, README says in words;
    tests/workflow/test_workflow.py checks them against the run)."""
    return {"tiny_command": command()}
