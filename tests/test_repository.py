"""The repository keeps its promises: README commands, CI, every rule logs and names its environment
(what the environments hold: tests/test_conda_envs.py)."""

import re
from pathlib import Path

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
