"""Every name a docstring cites exists: a dotted name of the library (``rollout_equality.x.y``, in the library, its
workflow scripts, the document generator and the benchmarks), and a cross-reference of the library's own docstrings
(``:func:`name```, ``:class:`.name```, ``:mod:`.sub```), resolved where the docstring stands."""

import ast
import dataclasses
import importlib
import re
from pathlib import Path

import pytest
from conftest import REPO

PACKAGE = REPO / "src" / "rollout_equality"
CITING = [
    *sorted(PACKAGE.rglob("*.py")),
    *sorted((REPO / "workflow" / "scripts").glob("*.py")),
    *sorted((REPO / "tools").rglob("*.py")),
    *sorted((REPO / "benchmarks").glob("*.py")),
]
"""The files whose docstrings may cite the library."""

DOTTED = re.compile(r"(?<![\w.])rollout_equality(?:\.\w+)+")
ROLE = re.compile(r":(?:func|class|data|mod|meth|attr|exc):`~?([^`<>\s]+)`")


def docstrings(tree: ast.AST, owner: str | None = None):
    """(line, text, class) of every docstring in ``tree``: modules', classes' and functions', and the strings that
    stand after an assignment (attribute docstrings); ``class``: the class it stands in (None outside one)."""
    body = getattr(tree, "body", None)
    if not isinstance(body, list):
        return
    for i, stmt in enumerate(body):
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            first = i == 0 and isinstance(tree, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
            if first or (i > 0 and isinstance(body[i - 1], (ast.Assign, ast.AnnAssign))):
                yield stmt.lineno, stmt.value.value, owner
        elif isinstance(stmt, ast.ClassDef):
            yield from docstrings(stmt, stmt.name if owner is None else f"{owner}.{stmt.name}")
        elif isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.If, ast.With, ast.Try, ast.For)):
            yield from docstrings(stmt, owner)


def resolve(name: str, context: str | None = None) -> bool:
    """Whether ``name`` exists: a module, or an attribute (or a dataclass field) reached from the longest module
    prefix of it. A name without the package's prefix is looked up from ``context`` (a module, or a class of one):
    as a name of the class or of its module, a submodule of its package (``.sub``) or a name of the package
    (``.name``); then as another package's (``scipy.stats.t``) or a builtin."""
    if name.startswith("rollout_equality") or context is None:
        return _exists(name)
    module = context
    while not _is_module(module):
        module = module.rsplit(".", 1)[0]
    package = module if PACKAGE.joinpath(*module.split(".")[1:], "__init__.py").exists() else module.rsplit(".", 1)[0]
    if name.startswith("."):
        return _exists(f"{package}{name}")
    scopes = [context, module, package] if context != module else [module, package]
    return any(_exists(f"{scope}.{name}") for scope in scopes) or _exists(name) or _exists(f"builtins.{name}")


def _is_module(name: str) -> bool:
    try:
        importlib.import_module(name)
    except ImportError:
        return False
    return True


def _exists(name: str) -> bool:
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:k]))
        except ImportError:
            continue
        for attr in parts[k:]:
            fields = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
            if attr in fields:
                return attr == parts[-1]  # a dataclass field: nothing further down to check
            if not hasattr(obj, attr):
                return False
            obj = getattr(obj, attr)
        return True
    return False


def stale_names(path: Path, source: str | None = None) -> list[str]:
    """``file:line: name`` for every cited name of ``path`` (or of ``source``, read as if it were that file) that
    does not exist."""
    tree = ast.parse(source if source is not None else path.read_text())
    inside = path.is_relative_to(PACKAGE)
    context = None
    if inside:
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        context = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
    where = path.relative_to(REPO)
    stale = []
    for line, text, owner in docstrings(tree):
        names = {m.rstrip(".") for m in DOTTED.findall(text)}
        if inside:
            names |= {m.rstrip(".()") for m in ROLE.findall(text)}
        scope = None if not inside else context if owner is None else f"{context}.{owner}"
        stale += [f"{where}:{line}: {n}" for n in sorted(names) if not resolve(n, scope)]
    return stale


def test_every_name_a_docstring_cites_exists():
    stale = [s for path in CITING if path.name != "__main__.py" for s in stale_names(path)]
    assert not stale, "\n".join(stale)


@pytest.mark.parametrize(
    "cited",
    [
        "rollout_equality.config.checks.no_such_function",
        "rollout_equality.no_such_module",
        "rollout_equality.measure.Reading.no_such_field",
        ":func:`no_such_function`",
        ":mod:`.no_such_module`",
    ],
)
def test_a_made_up_name_is_found_stale(cited):
    """The check can fail: a name that is nowhere is reported with its file and line, a real one is not."""
    path = PACKAGE / "measure.py"
    source = (
        f'"""Cites {cited} and :func:`measure_inputs`, :mod:`.condition`, rollout_equality.measure.Reading.device."""\n'
    )
    assert stale_names(path, source) == [
        f"src/rollout_equality/measure.py:1: {cited.split('`')[1] if '`' in cited else cited}"
    ]
