"""The library's layering: each stage imports only the stages below it (rollout_equality's docstring lists them),
and the package's top level stays small. Read from the source (ast), imports inside functions included."""

import ast

from conftest import REPO

PACKAGE = REPO / "src" / "rollout_equality"
STAGES = [
    {"config"},
    {"runtime"},
    {"condition"},
    {"acquire"},
    {"measure"},
    {"tabular"},
    {"reporting"},
    {"studies"},
    {"cli", "fingerprint", "__main__"},
]
"""Lowest first; a module of a stage may import its own stage and those before it."""
RANK = {name: rank for rank, stage in enumerate(STAGES) for name in stage}


def _imported(tree: ast.AST) -> set[str]:
    """The stages (first component below rollout_equality) a module's source imports."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("rollout_equality"):
            parts = node.module.split(".")[1:]
            found.update([parts[0]] if parts else [alias.name for alias in node.names])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("rollout_equality."))
    return found


def test_every_stage_imports_only_the_stages_below_it():
    broken = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE)
        stage = rel.parts[0].removesuffix(".py")
        if stage == "__init__":
            continue  # the package's root re-exports the condition's entry points, lazily
        for other in _imported(ast.parse(path.read_text())):
            if RANK[other] > RANK[stage]:
                broken.append(f"{rel} imports rollout_equality.{other}")
    assert not broken, broken


def test_the_package_top_level_holds_at_most_twelve_modules_and_every_stage_is_listed():
    top = sorted(p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists())
    assert len(top) <= 12, top
    assert {p.removesuffix(".py") for p in top} - {"__init__"} == set(RANK)


def test_every_package_opens_with_what_it_holds():
    for init in sorted(PACKAGE.rglob("__init__.py")):
        assert ast.get_docstring(ast.parse(init.read_text())), f"{init.relative_to(REPO)} has no docstring"


def test_the_documented_entry_points_import_from_the_package_root():
    import importlib

    import rollout_equality

    assert set(rollout_equality.__all__) >= {"attention_records", "equality_condition", "restrict", "rollout"}
    for name, module in rollout_equality.ENTRY_POINTS.items():
        assert getattr(rollout_equality, name) is getattr(importlib.import_module(module), name)


def test_each_package_and_docs_architecture_name_every_module():
    """A module added without a word in its package's docstring or in docs/architecture.md fails here."""
    architecture = (REPO / "docs" / "architecture.md").read_text()
    unnamed = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.stem in ("__init__", "__main__"):
            continue
        name = path.stem
        init = path.parent / "__init__.py"
        if path.parent != PACKAGE and f":mod:`.{name}`" not in ast.get_docstring(ast.parse(init.read_text())):
            unnamed.append(f"{path.relative_to(REPO)}: not in {init.relative_to(REPO)}")
        if f"`{name}`" not in architecture and f"`{name}/`" not in architecture:
            unnamed.append(f"{path.relative_to(REPO)}: not in docs/architecture.md")
    for package in sorted(p for p in PACKAGE.rglob("__init__.py") if p.parent != PACKAGE):
        inner = package.parent
        if inner.parent != PACKAGE and f":mod:`.{inner.name}`" not in ast.get_docstring(
            ast.parse((inner.parent / "__init__.py").read_text())
        ):
            unnamed.append(f"{inner.relative_to(REPO)}: not in its parent's docstring")
    assert not unnamed, unnamed
