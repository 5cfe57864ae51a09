"""Every path template and output key is stated once, in rollout_equality.config.paths; the rules and the library use it."""

import ast
import re
from pathlib import Path

import pytest
from conftest import REPO

from rollout_equality.config import paths

LIBRARY = REPO / "src/rollout_equality"
TOP_FOLDERS = re.compile(r"(?<![\w.-])(resources|results)/")


def docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring constants of a module, its classes and functions (prose, not paths in use)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


@pytest.mark.parametrize(
    "module", sorted(str(p.relative_to(LIBRARY)) for p in LIBRARY.rglob("*.py") if p.name != "paths.py")
)
def test_the_library_types_no_path_of_the_workflow(module):
    """No string the library computes with names resources/ or results/: paths come from the rule (or from
    rollout_equality.config.paths, for the messages that name a target)."""
    tree = ast.parse((LIBRARY / module).read_text())
    prose = docstrings(tree)
    literals = [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose
        if TOP_FOLDERS.search(node.value)
    ]
    assert not literals, f"{module}: path literals {literals} (state them in rollout_equality.config.paths)"


def test_the_rules_state_no_path_template_of_their_own():
    """The .smk files and the Snakefile name every file through rollout_equality.config.paths (logs and benchmarks with
    log_path / benchmark_path): no path literal is left."""
    for smk in [REPO / "Snakefile", *sorted((REPO / "workflow/rules").glob("*.smk"))]:
        for lineno, line in enumerate(smk.read_text().splitlines(), 1):
            if line.lstrip().startswith(('"""', "#")):  # a rule's docstring, a comment
                continue
            for literal in re.findall(r'"([^"]*)"', line):
                assert not (TOP_FOLDERS.search(literal) or literal.startswith("paper/")), f"{smk.name}:{lineno}: {line}"


def test_the_output_keys_are_the_ones_the_library_checks():
    from rollout_equality.reporting import figures
    from rollout_equality.reporting import ftt_ablation as ablation
    from rollout_equality.reporting import suite_tables as tables
    from rollout_equality.studies.dynamics import report

    assert tables.SUITE_TABLES is paths.SUITE_TABLES and ablation.ABLATION_FILES is paths.FTT_ABLATION
    assert report.SIMULATION_FILES is paths.SIMULATIONS and figures.SUITE_FIGURES is paths.FIGURE_NAMES
    assert set(paths.SUITE_FIGURES) == {f"{n}_{e}" for n in figures.SUITE_FIGURES for e in ("pdf", "png")}
    assert set(paths.TABLE_NAMES) == set(tables.TABLE_TITLES)


def test_the_templates_are_distinct_and_relative():
    templates = [v for k, v in vars(paths).items() if k.isupper() and isinstance(v, str)]
    templates += [p for k, v in vars(paths).items() if k.isupper() and isinstance(v, dict) for p in v.values()]
    files = [t for t in templates if "." in Path(t).name]
    assert len(files) == len(set(files)), "two outputs share a path"
    assert not [t for t in templates if Path(t).is_absolute() or ".." in Path(t).parts]
    assert paths.in_paper(paths.FTT_ABLATION["tex"]) == "tables/ftt_ablation"
