"""The repository keeps its promises: README commands, CI, conda environments."""

import re
import tomllib
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", quick, flags=re.S)]


def test_quick_start_has_exactly_two_commands_and_ci_runs_the_test_one():
    commands = readme_commands()
    assert len(commands) == 2 and all("\n" not in c for c in commands)
    install_and_run, install_and_test = commands
    assert install_and_run.endswith("snakemake --cores 2 offline")
    assert install_and_test.endswith("pytest")
    ci_lines = (REPO / ".ci/run").read_text().splitlines()
    assert install_and_test in ci_lines


def test_every_rule_has_log_and_an_existing_conda_env():
    for smk in (REPO / "workflow/rules").glob("*.smk"):
        text = smk.read_text()
        rules = re.split(r"^rule ", text, flags=re.M)[1:]
        for rule in rules:
            name = rule.split(":", 1)[0]
            assert "\n    log:" in rule, f"rule {name} in {smk.name} has no log:"
            env = re.search(r'\n    conda:\n        "([^"]+)"', rule)
            assert env, f"rule {name} in {smk.name} has no conda:"
            assert (smk.parent / env.group(1)).resolve().is_file(), f"rule {name}: {env.group(1)} missing"


CONDA_NAMES = {"matplotlib": "matplotlib-base", "torch": "pytorch", "huggingface-hub": "huggingface_hub"}
CONTROLLER_ONLY = {"snakemake", "jsonschema"}  # run in the controlling process, not in rule environments


def env_pins() -> dict[str, dict[str, str]]:
    """{env file: {package: lower bound}} over envs/*.yaml, pip sections included."""
    pins = {}
    for path in sorted((REPO / "envs").glob("*.yaml")):
        deps = yaml.safe_load(path.read_text())["dependencies"]
        flat = [d for d in deps if isinstance(d, str)] + [
            p for d in deps if isinstance(d, dict) for p in d.get("pip", [])
        ]
        pins[path.name] = {}
        for dep in flat:
            m = re.match(r"([A-Za-z0-9_.-]+) *>=([\d.]+)", dep)
            if m:
                pins[path.name][m.group(1)] = m.group(2)
    return pins


def test_conda_envs_pin_what_pyproject_requires():
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    pins = env_pins()
    for dep in project["dependencies"]:
        name, bound = re.match(r"([A-Za-z0-9_.-]+)>=([\d.]+)", dep).groups()
        if name in CONTROLLER_ONLY:
            continue
        conda_name = CONDA_NAMES.get(name, name)
        found = {env: p[conda_name] for env, p in pins.items() if conda_name in p}
        assert found, f"{name} (pyproject) is in no envs/*.yaml"
        assert set(found.values()) == {bound}, f"{name}: pyproject says >={bound}, envs say {found}"
