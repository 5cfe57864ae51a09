"""The tiny configuration of README's Quick start: the command that runs it, and which of the workflow's rules that run
executes (asked of Snakemake, in a dry run from an empty folder), so that README says what it runs without typing it."""

from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile

from tools.documents.kept import REPO
from tools.documents.wording import and_

CONFIG = ".test/config.yaml"
"""The tiny configuration, relative to the checkout."""
TARGETS = ("offline", "dynamics_offline")
"""What the Quick start's tiny run makes."""
FOLDER = "tiny"
"""Where it runs (git ignores it)."""


def command() -> str:
    """The Quick start's command: the tiny configuration alone, in a folder of its own."""
    return f".venv/bin/snakemake --configfile {CONFIG} --directory {FOLDER} --cores 2 {' '.join(TARGETS)}"


def step_rules() -> list[str]:
    """The workflow's rules that make files: every rule of workflow/rules/*.smk, ``use rule ... as`` ones included
    (the Snakefile names targets only)."""
    return [
        rule or alias
        for smk in sorted((REPO / "workflow" / "rules").glob("*.smk"))
        for rule, alias in re.findall(r"^(?:rule (\w+):|use rule \w+ as (\w+))", smk.read_text(), flags=re.M)
    ]


@functools.cache
def rules_run() -> tuple[str, ...]:
    """The step rules a tiny run executes, in the workflow's order: the job counts of Snakemake's dry run of the
    Quick start's targets from an empty folder (every job is to run)."""
    with tempfile.TemporaryDirectory() as empty:
        res = subprocess.run(
            [sys.executable, "-m", "snakemake", "-n", "--quiet", "rules", "--snakefile", str(REPO / "Snakefile")]
            + ["--configfile", str(REPO / CONFIG), "--directory", empty, *TARGETS],
            capture_output=True,
            text=True,
            env={**os.environ, "HF_HUB_OFFLINE": "1"},
            timeout=600,
        )
    if res.returncode != 0:
        raise RuntimeError(f"the dry run of the tiny configuration failed:\n{res.stdout[-2000:]}{res.stderr[-2000:]}")
    jobs = dict(re.findall(r"^(\w+)\s+(\d+)$", res.stdout, flags=re.M))
    return tuple(rule for rule in step_rules() if int(jobs.get(rule, 0)) > 0)


def values() -> dict[str, str]:
    """The ``{name}``s of README.in.md about the tiny run: its command, and which rules it runs."""
    rules, run = step_rules(), rules_run()
    left = [f"`{rule}`" for rule in rules if rule not in run]
    said = f"{len(run)} of the workflow's {len(rules)} rules" + (f", all but {and_(left)}" if left else ", every one")
    return {"tiny_command": command(), "tiny_rules": said}
