"""The workflow's rules as files state them: each rule's ``conda:`` and ``script:``, and the ``localrules:``.

Read from workflow/rules/*.smk as text (Snakemake's Python API changes between releases; the tests that run the
workflow call it in a subprocess).
"""

import re
from pathlib import Path

from conftest import REPO

RULE_FILES = sorted((REPO / "workflow/rules").glob("*.smk"))


def rules() -> dict[str, dict[str, Path | None]]:
    """Every rule of workflow/rules/*.smk with its ``conda:`` and ``script:`` paths (``use rule`` inherits)."""
    found: dict[str, dict[str, Path | None]] = {}
    for smk in RULE_FILES:
        blocks = re.split(r"^(?=rule |use rule )", smk.read_text(), flags=re.M)[1:]
        for block in blocks:
            head, body = block.split("\n", 1)
            block = "\n" + re.split(r"^\S", body, maxsplit=1, flags=re.M)[0]  # up to the next top-level line
            paths = {
                key: smk.parent / m.group(1) if (m := re.search(rf'\n    {key}:\n        "([^"]+)"', block)) else None
                for key in ("conda", "script")
            }
            if m := re.match(r"use rule (\w+) as (\w+) with:", head):
                base, name = found[m.group(1)], m.group(2)
                paths = {k: v or base[k] for k, v in paths.items()}
            else:
                name = re.match(r"rule (\w+):", head).group(1)
            found[name] = paths
    return found


def localrules() -> set[str]:
    """The rules named in a ``localrules:`` block (downloads and the seconds-long steps: they run on the submitting
    host)."""
    names = set()
    for smk in RULE_FILES:
        for block in re.findall(r"^localrules:\n((?:    \w+,?\n)+)", smk.read_text(), flags=re.M):
            names |= set(re.findall(r"\w+", block))
    return names
