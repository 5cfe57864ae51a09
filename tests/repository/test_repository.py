"""The repository keeps its promises: README commands, CI, every rule logs and names its environment
(what the environments hold: tests/repository/test_conda_envs.py)."""

import os
import re
import subprocess
import sys
from pathlib import Path

from conftest import REPO
from documented import ci_runs


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", quick, flags=re.S)]


def test_quick_start_installs_shows_a_result_runs_the_offline_suite_and_ci_runs_its_test_command():
    """Quick start: clone and install, the tiny run, the offline suite and the check against the kept run, one's own
    model; Tests: CI runs the tests as written, and their install is the Quick start's (what each command does is
    tests/repository/test_commands.py's)."""
    clone_and_install, tiny, offline_and_compare, own_model = readme_commands()
    clone, install = clone_and_install.splitlines()
    assert clone.startswith("git clone ") and "cd rollout-equality" in clone
    offline, compare = offline_and_compare.splitlines()
    assert " compare docs/offline results/tables/offline" in compare  # the run checked against the kept one
    assert "--configfile .test/config.yaml --directory tiny" in tiny and offline.endswith("snakemake --cores 2 offline")
    assert own_model.startswith(".venv/bin/rollout-equality measure --model ")
    text = (REPO / "README.md").read_text()
    tests = text.split("## Tests", 1)[1].split("\n## ", 1)[0]
    (install_and_test,) = [block.strip() for block in re.findall(r"```bash\n(.*?)```", tests, flags=re.S)]
    assert install_and_test.endswith(" && .venv/bin/pytest")
    assert install_and_test.removesuffix(" && .venv/bin/pytest") == install  # the lock holds the test tools too
    assert ci_runs(install_and_test)
    ignored = subprocess.run(["git", "check-ignore", "-q", "tiny/results/x.csv"], cwd=REPO)
    assert ignored.returncode == 0, "tiny/ (the Quick start's run folder) is not ignored by git"


def test_ci_stops_before_installing_anything_where_the_disk_is_too_full(tmp_path):
    """.ci/run checks the free space first: with less than it needs (a `df` that reports 3 GiB free, as CI's disk once
    had), it names the file system and what to free and exits 1, before apt, SLURM's install or pip has run."""
    import shutil

    (tmp_path / ".ci").mkdir()
    shutil.copy(REPO / ".ci/run", tmp_path / ".ci/run")  # alone: a step after the check would fail on a missing file
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "df").write_text(
        "#!/bin/sh\necho 'Filesystem 1G-blocks Used Available Capacity Mounted on'\n"
        "echo '/dev/vda 252G 249G 3G 99% /'\n"
    )
    for name in ("apt-get", "python3"):  # what a check that did not stop would run next: fail loudly, change nothing
        (fake / name).write_text(f"#!/bin/sh\necho '{name} ran' >&2\nexit 99\n")
    for tool in fake.iterdir():
        tool.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake}:{os.environ['PATH']}", "TMPDIR": str(tmp_path)}
    done = subprocess.run(["bash", ".ci/run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert done.stdout == ""
    message = done.stderr.strip()
    assert message.startswith(".ci/run: 3 GiB free on the file system of . (/); CI needs 12 GiB"), message
    assert "pytest's old folders in " + str(tmp_path) in message and message.endswith("and rerun.")
    assert "ran" not in message


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


# The Citation File Format's schema, version 1.2.0, as the format's own repository publishes it
# (github.com/citation-file-format/citation-file-format, tag 1.2.0, schema.json; CC-BY-4.0). Vendored: the tests
# reach no network, and cffconvert, the format's own validator, requires jsonschema < 4 (this project needs >= 4.20).
CFF_SCHEMA = REPO / "tests/data/cff-1.2.0.schema.json"
CFF_SCHEMA_SHA256 = "0b8d22140da702d766df318dcff3a91af2f39521298dcf36d76315fd99cc169b"


def cff_errors(citation: dict) -> list[str]:
    """What the CFF 1.2.0 schema (with its formats: dates, and URIs where a checker is installed) rejects in
    ``citation``, one line per error."""
    import json

    import jsonschema

    schema = json.loads(CFF_SCHEMA.read_text())
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    return [f"{'/'.join(map(str, e.path)) or '(top)'}: {e.message}" for e in validator.iter_errors(citation)]


def test_citation_file_is_valid_cff_and_cites_the_paper_and_the_companion_study():
    import hashlib
    import tomllib

    import yaml

    assert hashlib.sha256(CFF_SCHEMA.read_bytes()).hexdigest() == CFF_SCHEMA_SHA256, "the vendored schema changed"
    citation = yaml.safe_load((REPO / "CITATION.cff").read_text())
    assert cff_errors(citation) == []
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    assert (citation["version"], citation["license"]) == (project["version"], project["license"])
    paper = citation["preferred-citation"]
    assert paper["doi"] == "10.48550/arxiv.2610.05558" and paper["authors"] == [{"family-names": "Rola"}]
    assert paper["title"] in " ".join((REPO / "README.md").read_text().split())  # the paper README names
    companion = [r for r in citation["references"] if r["authors"] == [{"family-names": "Altafini"}]]
    assert [r["title"] for r in companion] == [
        "Asymptotic Analysis of Discrete-Time Self-Attention Dynamics in Transformers"
    ]
    # the check sees what a broken file gets wrong
    broken = {**citation, "preferred-citation": {**paper, "doi": "arXiv:2610.05558", "status": "published"}}
    del broken["title"]
    errors = cff_errors(broken)
    assert sorted(e.split(": ", 1)[0] for e in errors) == [
        "(top)",
        "preferred-citation/doi",
        "preferred-citation/status",
    ], errors
    assert any("'title' is a required property" in e for e in errors), errors


def test_license_is_the_one_pyproject_declares():
    import tomllib

    assert tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["license"] == "MIT"
    text = (REPO / "LICENSE").read_text()
    assert text.startswith("MIT License\n\nCopyright (c) 2026 The rollout-equality authors\n")
    assert 'THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND' in text


def test_pre_commit_runs_the_form_checks_of_ci(tmp_path):
    """.pre-commit-config.yaml runs .ci/run's code-form checks, each hook the command CI runs (on the files a commit
    changes instead of on every file); run for real in a scratch clone it passes, and fails on a file out of form."""
    import shutil

    import yaml
    from scratch import scratch_clone

    ci = (REPO / ".ci/run").read_text().split("# The code's form", 1)[1].splitlines()[1:]
    ci_checks = [line for line in ci if line.startswith(".venv/bin/")]
    hooks = yaml.safe_load((REPO / ".pre-commit-config.yaml").read_text())["repos"]
    assert [repo["repo"] for repo in hooks] == ["local"]
    entries = [hook["entry"].replace(" --force-exclude", "") for hook in hooks[0]["hooks"]]
    # CI's line is the hook's command followed by the paths it checks ("." or the workflow's files), or equal to it
    assert [next((e for e in entries if line == e or line.startswith(e + " ")), None) for line in ci_checks] == entries
    assert len(ci_checks) == 4

    pre_commit = Path(sys.prefix) / "bin" / "pre-commit"
    assert pre_commit.exists(), "pre-commit is in the test extra: pip install -e '.[test]'"
    clone = scratch_clone(tmp_path / "clone")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}

    def run() -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(pre_commit), "run", "--all-files"], cwd=clone, env=env, capture_output=True, text=True, timeout=600
        )

    res = run()
    assert res.returncode == 0, res.stdout + res.stderr
    assert [line.split(".")[0] for line in res.stdout.splitlines() if line.endswith("Passed")] == [
        "ruff check",
        "ruff format --check",
        "snakefmt --check",
        "snakemake --lint",
    ]
    (clone / "src/rollout_equality/untidy.py").write_text("import os,sys\nx = {'a':1}\n")
    rules = clone / "workflow/rules/baseline.smk"
    rules.write_text(rules.read_text().replace('"../../envs/workflow.yaml"', "'../../envs/workflow.yaml'", 1))
    subprocess.run(["git", "add", "--all"], cwd=clone, check=True)
    res = run()
    failed = [line.split(".")[0] for line in res.stdout.splitlines() if line.endswith("Failed")]
    assert res.returncode == 1 and failed == ["ruff check", "ruff format --check", "snakefmt --check"], res.stdout
    shutil.rmtree(clone)
