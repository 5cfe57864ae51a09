"""The Snakemake workflow: config validation, lint, and an end-to-end offline run."""

import copy
import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from schema import CONDITION
from slurm_harness import make_site_profile, one_node_slurm

from rollout_equality.condition.baseline import random_baseline
from rollout_equality.config.load import validated
from rollout_equality.config.settings import Baseline, from_section
from rollout_equality.runtime.device import gpu_claim

# The tiny end-to-end configuration (runnable by hand in a folder of its own: README, Quick start).
TINY = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def snakemake(
    workdir: Path, *args: str, config: dict | None = None, env: dict | None = None
) -> subprocess.CompletedProcess:
    """Run `python -m snakemake` on this repository's Snakefile in ``workdir`` (``env``: more environment variables)."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    if config is not None:
        cfg = workdir / "config.yaml"
        cfg.write_text(yaml.safe_dump(config, sort_keys=False))  # the config's own order, as README's runs read it
        cmd += ["--configfile", str(cfg)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SOURCE_DATE_EPOCH": "0", **(env or {})}
    return subprocess.run(cmd + list(args), cwd=workdir, env=env, capture_output=True, text=True, timeout=900)


def test_lint_passes(tmp_path):
    res = snakemake(tmp_path, "--lint", config=TINY)
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("profile", ["local", "site"])
def test_profiles_plan_the_offline_suite(tmp_path, profile):
    """Both profiles parse and plan every job (a dry run: no SLURM controller is needed to plan), each alone:
    no workflow profile (profiles/default) is applied beside them, so local settings cannot leak into a cluster run.
    ``site``: the site profile made from profiles/slurm (docs/cluster.md), with a GPU partition for measure: every
    rule keeps profiles/slurm's own resources beside the site's partitions."""
    path = REPO / "profiles/local"
    if profile == "site":
        flags = ("--partition", "cpu", "--account", "lab", "--gpu-partition", "gpu")
        path = make_site_profile(tmp_path / "site", *flags)
    res = snakemake(tmp_path, "-n", "--profile", str(path), "offline", "dynamics_offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert "measure_ftt" in res.stdout and "random_baseline" in res.stdout and "unroll_albert" in res.stdout
    assert not (REPO / "profiles" / "default").exists()
    assert "workflow specific profile" not in res.stdout + res.stderr
    assert f"Using profile {path}" in res.stdout + res.stderr
    if profile == "site":
        measure = res.stdout.split("rule measure:")[1].split("\n\n")[0]
        for resource in ("slurm_partition=gpu", "slurm_account=lab", "cpus_per_task=8", "mem_mb=24000", "runtime=240"):
            assert resource in measure, measure
        unroll = res.stdout.split("rule unroll_albert:")[1].split("\n\n")[0]
        for resource in ("slurm_partition=cpu", "slurm_account=lab", "cpus_per_task=4", "mem_mb=8000", "runtime=60"):
            assert resource in unroll, unroll  # its own resources, the site's default partition


def test_repository_config_is_valid(tmp_path):
    res = snakemake(tmp_path, "-n", "all", config=yaml.safe_load((REPO / "config.yaml").read_text()))
    assert res.returncode == 0, res.stderr
    assert "random_baseline" in res.stdout
    res = snakemake(tmp_path, "-n", "dynamics", config=yaml.safe_load((REPO / "config.yaml").read_text()))
    assert res.returncode == 0, res.stderr
    assert "unroll_albert" in res.stdout and "simulate_dynamics" in res.stdout


def planned(res: subprocess.CompletedProcess, rule: str) -> int:
    """How many jobs of ``rule`` a dry run plans (its job stats)."""
    found = re.search(rf"^{rule}\s+(\d+)$", res.stdout, flags=re.M)
    return int(found.group(1)) if found else 0


GIANT = {"dinov2_giant": {"backend": "transformers", "modality": "image", "hub": {"id": "facebook/dinov2-giant"}}}
GIANT["dinov2_giant"]["hub"]["revision"] = "main"


def test_an_overlay_adds_a_suite_of_its_own_and_says_when_it_shrinks_a_shipped_one(tmp_path):
    """`--configfile my.yaml` is merged into config.yaml as Snakemake merges it: mappings key by key, lists replaced.
    A suite of one's own lands beside the shipped suites, with its target suite_<name>; an overlay that lists a
    shipped suite replaces it, and the run says so, naming what it left out."""
    shutil.copy(REPO / "config.yaml", tmp_path / "config.yaml")
    shipped = yaml.safe_load((REPO / "config.yaml").read_text())["suites"]["paper"]
    mine = tmp_path / "mine.yaml"
    mine.write_text(
        yaml.safe_dump({"models": GIANT, "suites": {"mine": [{"model": "dinov2_giant", "dataset": "imagenet_val"}]}})
    )
    res = snakemake(tmp_path, "--configfile", str(mine), "-n", "all", "suite_mine")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert planned(res, "measure") == len(shipped) + 1 and "Warning: suites." not in res.stdout + res.stderr
    shrinking = tmp_path / "shrinking.yaml"
    shrinking.write_text(
        yaml.safe_dump({"models": GIANT, "suites": {"paper": [{"model": "dinov2_giant", "dataset": "imagenet_val"}]}})
    )
    res = snakemake(tmp_path, "--configfile", str(shrinking), "-n", "all")
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert planned(res, "measure") == 1
    assert (
        f"Warning: suites.paper: this run keeps 0 of the {len(shipped)} entries of the config file"
        in res.stdout + res.stderr
    )


def test_dropped_by_overlay_names_each_suite_and_what_it_lost():
    from rollout_equality.config.checks import dropped_by_overlay

    shipped = {
        "suites": {"paper": [{"model": "a", "dataset": "d"}, {"model": "b", "dataset": "d"}], "offline": []},
        "tabular": {"suites": {"paper": ["t1", "t2"]}},
    }
    same = {"suites": {**shipped["suites"], "mine": [{"model": "c", "dataset": "d"}]}, "tabular": shipped["tabular"]}
    assert dropped_by_overlay(shipped, same) == []
    more = {"suites": {"paper": [{"model": "b", "dataset": "d", "heatmap": False}, {"model": "a", "dataset": "d"}]}}
    assert dropped_by_overlay(shipped, {**more, "tabular": {"suites": {"paper": ["t2", "t1", "t3"]}}}) == []
    shrunk = {"suites": {"paper": [{"model": "b", "dataset": "d"}], "offline": []}, "tabular": {"suites": {}}}
    messages = dropped_by_overlay(shipped, shrunk)
    assert [m.split(" (", 1)[0] for m in messages] == [
        "suites.paper: this run keeps 1 of the 2 entries of the config file",
        "tabular.suites.paper: this run keeps 0 of the 2 entries of the config file",
    ]
    assert "(a on d left out)" in messages[0] and "(t1, t2 left out)" in messages[1]
    assert "target suite_mine" in messages[0] and "with suites: {mine: []}" in messages[1]


BAD_CONFIGS = [
    (lambda c: c["baseline"].update(trails=10), "trails"),
    (lambda c: c.update(baselin={}), "baselin"),
    (lambda c: c["baseline"].update(trials="many"), "baseline/trials"),
    (lambda c: c["condition"].update(atol=-1), "condition/atol"),
    (lambda c: c["baseline"].update(ns=[1, 5]), "baseline/ns/0"),
    (lambda c: c["models"]["minilm"].update(backend="keras"), "keras"),
    (lambda c: c["datasets"]["pydoc"].update(sead=1), "sead"),
    (lambda c: c["extraction"].update(device="tpu"), "tpu"),
    (
        lambda c: c["dynamics"]["simulations"]["consensus"].update(eta=0),
        "dynamics/simulations/consensus/eta",
    ),
    (lambda c: c["dynamics"]["simulations"]["bipartite"].pop("radii"), "radii"),
    (lambda c: c["dynamics"]["simulations"]["asymmetric"]["F"].update(symmetric=[1.0]), "asymmetric/F"),
    (lambda c: c["models"]["tiny_timm_deit"]["random_init"].pop("timm_name"), "'timm_name' is a required property"),
    (lambda c: c["models"]["tiny_albert"]["random_init"].pop("config"), "'config' is a required property"),
    (lambda c: c["tabular"]["training"].update(threads=0), "tabular/training/threads"),
    (lambda c: c["suites"].update({"my suite": []}), "'my suite' does not match"),
]


def mutated(mutate) -> dict:
    config = copy.deepcopy(TINY)
    mutate(config)
    return config


@pytest.mark.parametrize("mutate, named", BAD_CONFIGS)
def test_bad_config_fails_naming_the_key(mutate, named):
    """The schema's checks, in-process: common.smk loads the config through this same loader (wiring: below)."""
    with pytest.raises(ValueError) as error:
        validated(mutated(mutate))
    assert str(error.value).startswith("config: ") and named in str(error.value), str(error.value)


def test_the_workflow_validates_its_config_and_checks_its_references(tmp_path):
    """The wiring: a run validates the config against the schema (a bad key), then checks its references."""
    mutate, named = BAD_CONFIGS[0]
    res = snakemake(tmp_path, "-n", config=mutated(mutate))
    said = res.stdout + res.stderr
    assert res.returncode != 0 and "config: baseline: Additional properties" in said and named in said, said[-2000:]
    config = mutated(lambda c: c["suites"]["offline"].append({"model": "gpt5", "dataset": "pydoc"}))
    res = snakemake(tmp_path, "-n", "offline", config=config)
    assert res.returncode != 0 and "model 'gpt5' is not defined" in res.stdout + res.stderr


@pytest.mark.parametrize(
    "mutate, message",
    [
        (
            lambda c: c["dynamics"]["albert"]["suites"]["offline"].update(dataset="photos"),
            "dynamics.albert.suites.offline (ALBERT): model 'tiny_albert' reads text but data set 'photos' holds image",
        ),
        (lambda c: c["suites"]["offline"].append({"model": "gpt5", "dataset": "pydoc"}), "model 'gpt5' is not defined"),
        (
            lambda c: c["suites"]["offline"].append({"model": "minilm", "dataset": "photos"}),
            "reads text but data set 'photos' holds image",
        ),
    ],
)
def test_a_config_referring_to_the_wrong_entry_fails_naming_it(mutate, message):
    with pytest.raises(ValueError) as error:
        validated(mutated(mutate))
    assert message in str(error.value)


# A message of docutils, which renders the report's captions (reStructuredText): "<string>:1: (ERROR/3) Undefined
# substitution referenced: ..." in Snakemake's output, and a "problematic" or "system-message" mark in the page.
DOCUTILS_MESSAGE = re.compile(r"\((?:DEBUG|INFO|WARNING|ERROR|SEVERE)/[0-4]\)")


def report_problems(res: subprocess.CompletedProcess, report: Path) -> list[str]:
    """What docutils said while Snakemake wrote ``report`` (each line of its output with a docutils message), and
    the marks docutils leaves in the page where a caption did not render."""
    said = [line for line in (res.stdout + res.stderr).splitlines() if DOCUTILS_MESSAGE.search(line)]
    page = report.read_text(encoding="utf-8", errors="replace")
    return said + [mark for mark in ("problematic", "system-message") if mark in page]


def test_report_problems_finds_a_docutils_error(tmp_path):
    page = tmp_path / "report.html"
    page.write_text('<span class="problematic">|corr|</span>')
    out = '<string>:1: (ERROR/3) Undefined substitution referenced: "corr(x_i, v1)".'
    res = subprocess.CompletedProcess([], 0, stdout=f"Building report\n{out}\n", stderr="")
    assert report_problems(res, page) == [out, "problematic"]
    page.write_text("<p>fine</p>")
    assert report_problems(subprocess.CompletedProcess([], 0, stdout="Building report\n", stderr=""), page) == []


def caption_messages(rst: str) -> list[str]:
    """What docutils says rendering the caption ``rst`` as Snakemake's report renders it (Jinja first, with the
    validated tiny config as ``snakemake.config``, then reStructuredText to HTML): its warnings and errors."""
    import io
    from types import SimpleNamespace

    import jinja2
    from docutils.core import publish_parts
    from schema import validated

    text = jinja2.Environment().from_string(rst).render(snakemake=SimpleNamespace(config=validated()))
    stream = io.StringIO()
    publish_parts(text, writer="html", settings_overrides={"warning_stream": stream, "report_level": 2})
    return [line for line in stream.getvalue().splitlines() if DOCUTILS_MESSAGE.search(line)]


def test_caption_messages_finds_a_substitution():
    assert caption_messages("mean |corr(x_i, v1)| per token") == [
        '<string>:1: (ERROR/3) Undefined substitution referenced: "corr(x_i, v1)".'
    ]
    assert caption_messages("mean \\|corr(x_i, v1)\\| per token, ``heatmap: true``") == []


@pytest.mark.parametrize("caption", sorted((REPO / "workflow/report").glob("*.rst")), ids=lambda p: p.name)
def test_report_captions_render_without_a_docutils_message(caption):
    """Each caption of the HTML report is reStructuredText that renders cleanly (the slow report runs check
    Snakemake's own output too)."""
    assert caption_messages(caption.read_text()) == []


@pytest.mark.slow
def test_dynamics_offline_end_to_end_is_deterministic(local_runs):
    """The tiny dynamics study of the two runs (2 cores; one thread per job): its outputs, the same bytes in both, and
    its report."""
    a, b = (run.workdir for run in local_runs)
    summary = pd.read_csv(a / "results/tables/dynamics/simulations.csv")
    assert summary["experiment"].tolist() == ["consensus", "bipartite", "multihead", "asymmetric"]
    assert (summary["radius_v1"] < 1).all() and (summary["radius_v2"] > 1).all()
    steps = pd.read_csv(a / "results/tables/dynamics/offline/albert_steps.csv")
    assert steps["step"].tolist() == list(range(25)) and (steps["inputs"] == 3).all()
    tex = (a / "paper/tables/dynamics/offline/albert.tex").read_text()
    assert tex.count("\\\\") == 9  # header + steps 1, 2, 4, 8, 12, 16, 20, 24
    for name in ("consensus", "bipartite", "multihead", "asymmetric", "basin", "offline/albert"):
        assert (a / f"paper/figures/dynamics/{name}.png").stat().st_size > 5000
    assert "unroll ALBERT" in (a / "results/logs/unroll_albert/tiny_albert/pydoc.log").read_text()
    res = snakemake(a, "--cores", "2", "--report", str(a / "report.html"), "dynamics_offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert report_problems(res, a / "report.html") == []
    report = (a / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "albert.png" in report and "basin.png" in report and "simulations.html" in report
    outputs = sorted(
        str(p.relative_to(a))
        for folder in ("results/tables/dynamics", "paper/tables/dynamics")
        for p in (a / folder).rglob("*")
        if p.is_file()
    )
    outputs += [
        "results/dynamics/simulations/trajectory.csv",
        "results/dynamics/simulations/basin.csv",
        "paper/figures/dynamics/consensus.pdf",
        "paper/figures/dynamics/offline/albert.pdf",
    ]
    assert len(outputs) == 12  # summary and ALBERT steps as CSV and HTML, 4 LaTeX tables, 4 files listed
    sweep = pd.read_csv(a / "results/dynamics/simulations/beta_sweep.csv")
    assert sweep["beta"].tolist() == [0.5, 1.0] and sweep["stable"].tolist() == [False, True]
    for rel in outputs:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), f"{rel} differs between identical runs"


# What a site changes: partition, account, and resources that fit its nodes. Here one node of
# `nproc` CPUs without GPUs or accounting, every job on one CPU (the 2-core run it is compared with gave measure
# and the baseline two threads; FT-Transformer trains and measures on tabular.training.threads whatever the job
# is given). Status checks from 2 s after a submission (the plugin's default, 40 s, suits hour-long jobs).
SLURM_SITE = [
    "--slurm-init-seconds-before-status-checks",
    "2",
    "--slurm-keep-successful-logs",
    "--set-threads",
    "random_baseline=1",
    "measure=1",
    "--default-resources",
    "slurm_partition=debug",
    "mem_mb=2000",
    "runtime=30",
    "cpus_per_task=1",
    "--set-resources",
    *[
        f"{rule}:{key}"
        for rule in ("random_baseline", "measure", "train_ftt", "measure_ftt", "unroll_albert", "simulate_dynamics")
        for key in ("slurm_partition=debug", "mem_mb=3000", "cpus_per_task=1")
    ],
]


@dataclass(frozen=True)
class SecondRun:
    workdir: Path
    seconds: float
    output: str  # Snakemake's stdout and stderr
    slurm: Path | None  # the one-node SLURM's state folder (its controller's log): None for a local run
    why_local: str = ""  # why the run was local


@pytest.fixture(scope="module")
def local_runs(request, tmp_path_factory):
    """Two runs of the tiny offline suite and dynamics study, as (conftest's ``TinyRun``, ``SecondRun``): every check
    below reads them (the first run's outputs, or both compared).

    The first is README's Quick start run on 2 cores (shared with tests/repository/test_commands.py). The second runs in a fresh
    directory with one thread per job: through profiles/slurm on a one-node SLURM (tests/slurm/harness.sh), jobs
    on one CPU each, where SLURM can start here (CI requires it: ROLLOUT_REQUIRE_SLURM); otherwise locally on
    ``--cores 1``, and the SLURM test skips with the harness's reason. Either way it is a second run of the same
    config on other cores, whose outputs must be the first's bytes. The second run needs nothing of the first: it
    runs first, while another worker may be running the Quick start (conftest.py)."""
    workdir = tmp_path_factory.mktemp("second_run")
    state = tmp_path_factory.mktemp("slurm")
    # the node declares 8 CPUs and 32 GB whatever the host has, for the site profile's real requests (measure's 8
    # CPUs and 24000 MB: test_the_site_profile_keeps_every_resource_of_profiles_slurm_on_a_real_slurm)
    with one_node_slurm(state, cpus=8, mem_mb=32000) as (slurm, why):
        if slurm is None:
            args = ["--cores", "1"]
        else:  # the site profile a site makes from profiles/slurm (docs/cluster.md), then this site's overrides
            args = ["--profile", str(make_site_profile(state / "site")), "--jobs", "2", *SLURM_SITE, "--"]
        start = time.monotonic()
        res = snakemake(workdir, *args, "offline", "dynamics_offline", config=TINY)
        second = SecondRun(workdir, time.monotonic() - start, res.stdout + res.stderr, slurm, why)
        assert res.returncode == 0, second.output[-6000:]
        a = request.getfixturevalue("quick_start_run")
        assert a.result.returncode == 0, a.result.stdout[-5000:] + a.result.stderr[-5000:]
        where = "through SLURM, a CPU per job" if slurm else "on 1 core"
        print(f"tiny offline suite and dynamics study: {a.seconds:.0f} s on 2 cores, {second.seconds:.0f} s {where}")
        yield a, second


@pytest.fixture(scope="module")
def run_a(local_runs) -> Path:
    return local_runs[0].workdir


def job_counts(output: str) -> dict[str, int]:
    """The jobs Snakemake planned, by rule: its "Job stats" table (the first, the whole run's), the total left out."""
    table = output.split("Job stats:", 1)[1].split("\n\n", 1)[0]
    return {rule: int(n) for rule, n in re.findall(r"^(\w+)\s+(\d+)$", table, flags=re.M) if rule != "total"}


def test_the_quick_start_runs_the_rules_readme_says_it_runs(local_runs):
    """docs/targets.md names the rules README's Quick start's tiny run leaves out (its section "The tiny run"); the run
    itself ran every other rule."""
    from workflow_rules import rules

    section = (REPO / "docs/targets.md").read_text().split("## The tiny run", 1)[1].split("\n## ", 1)[0]
    left_out = "\n".join(line for line in section.splitlines() if line.startswith("- "))
    said = set(re.findall(r"`(\w+)`", left_out))
    ran = set(job_counts(local_runs[0].result.stdout + local_runs[0].result.stderr)) & set(rules())  # not targets
    assert said and ran == set(rules()) - said, (sorted(ran), sorted(said))


def deterministic_outputs(workdir: Path) -> list[str]:
    """Every table, summary, record and manifest of a run: what the same config must reproduce byte for byte on any
    machine (whatever the core count)."""
    found = [
        p
        for folder in ("results/tables", "paper/tables", "results/summaries", "results/records")
        for p in (workdir / folder).rglob("*")
        if p.is_file()
    ]
    found += list((workdir / "resources").rglob("manifest.json")) + list((workdir / "resources").rglob("data.npz"))
    found += [workdir / "results/baseline/random_baseline.csv", workdir / "paper/figures/baseline_rate.pdf"]
    return sorted(str(p.relative_to(workdir)) for p in found)


PAPER_ONLY = "paper/tables/offline/ftt_ablation_section.tex"  # written by the paper build (run in `a` only)


@pytest.mark.slow
def test_offline_baseline_table_figure_and_log(run_a):
    a = run_a
    table = pd.read_csv(a / "results/baseline/random_baseline.csv")
    b = from_section(Baseline, TINY["baseline"])
    expected = random_baseline(
        b.ns, b.trials, b.seed, atol=CONDITION.atol, chunk_size=b.chunk_size, show_progress=False
    )
    pd.testing.assert_frame_equal(table, expected, check_exact=False, atol=1e-6)
    tex = (a / "paper/tables/baseline.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex and tex.count("\\\\") == 4  # header + 3 rows
    for figure in ("baseline_rate.pdf", "baseline_rate.png"):
        assert (a / "paper/figures" / figure).stat().st_size > 5000
    log = (a / "results/logs/random_baseline.log").read_text()
    assert "random baseline" in log and "n=17:" in log  # progress bar and summary went to the log


@pytest.mark.slow
def test_offline_records_count_each_familys_special_tokens(run_a):
    a = run_a
    records = pd.read_parquet(a / "results/records/tiny_dinov2_reg/photos.parquet")
    assert len(records) == 3 * 2 * 2  # inputs × layers × token sets
    assert set(records.loc[records.token_set == "all", "n_tokens"]) == {21}  # 16 patches + CLS + 4 registers
    assert set(records.loc[records.token_set == "content", "n_tokens"]) == {16}
    assert records["seed"].isna().all()  # no training seed: only FT-Transformer records carry one
    deit = pd.read_parquet(a / "results/records/tiny_timm_deit/photos.parquet")
    n_all = deit.loc[deit.token_set == "all", "n_tokens"].to_numpy()
    n_content = deit.loc[deit.token_set == "content", "n_tokens"].to_numpy()
    assert (n_all - n_content == 2).all()  # CLS and distillation token
    assert deit["input_id"].nunique() == 2  # the experiment's `inputs: 2` of its data set's 3
    minilm = pd.read_csv(a / "results/summaries/minilm/pydoc.csv")
    assert set(minilm["token_set"]) == {"content", "all"} and (minilm["agreement"] == 1).all()
    assert len(minilm) == 2 * 7  # 6 layers + pooled, per token set
    assert (a / "results/attention/minilm/pydoc.npz").stat().st_size > 0
    assert "measure" in (a / "results/logs/measure/minilm/pydoc.log").read_text()


@pytest.mark.slow
def test_offline_ftt_records_scores_and_table(run_a):
    a = run_a
    ftt = pd.read_parquet(a / "results/records/ftt/cancer/seed0.parquet")
    assert len(ftt) == 10 * 3 * 2 and set(ftt["n_tokens"]) == {31, 30}
    assert set(ftt["seed"]) == {0} and set(
        pd.read_parquet(a / "results/records/ftt/cancer/seed0.rollout.parquet")["seed"]
    ) == {0}
    ftt_rows = pd.read_csv(a / "results/tables/offline/ftt.csv")
    assert ftt_rows[["dataset", "seed", "metric"]].values.tolist() == [["cancer", 0, "accuracy"]]
    assert 0 <= ftt_rows.iloc[0]["content"] <= 1
    scores = pd.read_csv(a / "results/tables/offline/ftt_scores.csv")
    assert scores[["dataset", "seed", "metric", "published"]].values.tolist() == [["cancer", 0, "accuracy", 0.97]]


@pytest.mark.slow
def test_offline_claims_rates_and_the_recipe_ablation(run_a):
    a = run_a
    claims = pd.read_csv(a / "results/tables/offline/claims.csv")
    assert claims.iloc[0]["claim"] == TINY["claims"]["baseline"]["text"]
    # tiny_albert is a model of the dynamics study only: not run, and the claims table says why
    albert = claims[claims["subject"] == "tiny_albert"].iloc[0]
    assert albert["status"] == "not run" and albert["note"] == "in no suite (add it under suites:)"
    special = claims[claims["claim"] == TINY["claims"]["special_tokens"]["text"]]
    assert special["subject"].tolist() == ["minilm on pydoc", "tiny_dinov2_reg on photos (out of sample)"]
    assert special["note"].str.contains("pairs failing on all tokens hold on content tokens|no pair fails").all()
    rates = pd.read_csv(a / "results/tables/offline/model_rates.csv")
    assert set(rates["model"]) == {"minilm", "tiny_dinov2_reg", "tiny_timm_deit", "ftt_seed0"}
    assert (a / "paper/tables/offline/model_rates.tex").read_text().count("\\toprule") == 1
    # the recipe ablation (tiny: 3 settings of cancer, 1 seed): its own tables and a claims row of its range
    ablation = pd.read_csv(a / "results/tables/ftt_ablation/summary.csv")
    # in the config's order; each described against the reference
    changes = {
        "reference": "reference recipe",
        "two_logits": "binary_head=two_logits",
        "no_noise": "quantile_noise=none; n_quantiles=100; patience=0",
    }
    order = list(TINY["tabular"]["ablation"]["settings"])
    assert sorted(order) == sorted(changes) and ablation["setting"].tolist() == order
    assert ablation["changes"].tolist() == [changes[s] for s in order]
    assert ablation["content_rate"].between(0, 1).all() and (ablation["seeds"] == 1).all()
    layers = pd.read_csv(a / "results/tables/ftt_ablation/layers.csv")
    assert len(layers) == 3 * 2 * 3  # settings × token sets × blocks
    recipe_row = claims[claims["status"] == "recipe-dependent"]
    assert len(recipe_row) == 1 and recipe_row.iloc[0]["subject"] == "recipe ablation (3 settings × 1 seed)"


@pytest.mark.slow
def test_offline_figures_and_the_html_report(run_a):
    a = run_a
    for figure in ("depth", "slack", "rollout", "heatmap"):
        assert (a / f"paper/figures/offline/{figure}.png").stat().st_size > 5000
    res = snakemake(a, "--cores", "2", "--report", str(a / "report.html"), "offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert report_problems(res, a / "report.html") == []
    report = (a / "report.html").read_text(encoding="utf-8", errors="replace")
    assert "depth.png" in report and "claims.csv" in report and "baseline_rate.png" in report


@pytest.mark.slow
def test_offline_paper_builds_and_an_edited_table_rebuilds_it(run_a):
    if not shutil.which("latexmk"):  # CI installs TeX: the paper builds from the offline suite's outputs
        pytest.skip(
            "no latexmk (CI installs TeX: apt-get install texlive-latex-base texlive-latex-recommended latexmk)"
        )
    a = run_a
    (a / "paper").mkdir(exist_ok=True)
    shutil.copy(REPO / "paper/main.tex", a / "paper/main.tex")
    res = snakemake(a, "--cores", "2", "paper_offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    assert (a / "paper/suite-offline.pdf").read_bytes()[:5] == b"%PDF-"
    log = (a / "paper/suite-offline.log").read_text(errors="replace")
    assert "Overfull \\hbox" not in log, [line for line in log.splitlines() if line.startswith("Overfull")]
    section = (a / PAPER_ONLY).read_text()
    assert "\\input{tables/ftt_ablation}" in section and "sha256" in section
    # Every table main.tex reads is an input of the PDF: an edited one rebuilds it. (Snakemake compares
    # the checksum of a newer small input with the one it recorded: touching alone changes nothing.)
    res = snakemake(a, "-n", "paper_offline", config=TINY)
    assert "build_paper" not in res.stdout, res.stdout[-2000:]
    table = a / "paper/tables/offline/ftt.tex"
    original = table.read_bytes()
    table.write_bytes(original + b"% edited\n")
    res = snakemake(a, "-n", "paper_offline", config=TINY)
    table.write_bytes(original)
    assert "rule build_paper" in res.stdout and "paper/tables/offline/ftt.tex" in res.stdout, res.stdout[-2000:]


@pytest.mark.slow
def test_another_seed_trains_one_more_model_without_fetching_or_preparing_again(local_runs):
    b = local_runs[1].workdir
    more = copy.deepcopy(TINY)
    more["tabular"]["seeds"] = [0, 1]
    res = snakemake(b, "-n", "offline", config=more)
    (b / "config.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    assert res.returncode == 0, res.stdout[-2000:] + res.stderr[-2000:]
    assert "rule train_ftt" in res.stdout and "seed1" in res.stdout
    assert "rule prepare_tabular" not in res.stdout and "rule fetch_table" not in res.stdout, res.stdout[-3000:]


@pytest.mark.slow
def test_offline_suite_is_byte_identical_on_1_and_2_cores(local_runs):
    """Same config, same bytes, whatever --cores: every table, summary, record and manifest (FT-Transformer
    training and measurement use tabular.training.threads, not the job's cores)."""
    a, b = (run.workdir for run in local_runs)
    outputs = [o for o in deterministic_outputs(a) if o != PAPER_ONLY]
    assert [o for o in deterministic_outputs(b) if o != PAPER_ONLY] == outputs
    for rel in (
        "results/tables/offline/claims.csv",
        "paper/tables/offline/model_rates.tex",
        "results/tables/offline/ftt_scores.csv",
        "results/summaries/ftt/cancer/seed0.csv",
        "results/records/ftt/cancer/seed0.parquet",
        "results/records/minilm/pydoc.rollout.parquet",
        "resources/data/pydoc/manifest.json",
        "resources/tabular/cancer/manifest.json",
        "resources/tabular/cancer/data.npz",
    ):
        assert rel in outputs
    differ = [rel for rel in outputs if (a / rel).read_bytes() != (b / rel).read_bytes()]
    assert not differ, f"differ between --cores 2 and --cores 1: {differ}"


@pytest.mark.slow
def test_the_tiny_run_compared_with_its_rerun_is_identical_row_by_row(local_runs):
    """`rollout-equality compare` on two real tables folders: every table of a run is read and compared (a header
    that is not the one compare expects exits 2), every row identical, exit 0."""
    from rollout_equality.reporting.compare import TABLES

    a, b = (run.workdir for run in local_runs)
    tables = [a / "results/tables/offline", b / "results/tables/offline"]
    names = [name for name in TABLES if not name.startswith("supervision_")]  # the supervision study's: its own folder
    assert all((t / f"{name}.csv").is_file() for t in tables for name in names)
    res = subprocess.run(
        [sys.executable, "-m", "rollout_equality", "compare", *map(str, tables)], capture_output=True, text=True
    )
    assert res.returncode == 0, res.stdout + res.stderr
    (summary,) = res.stdout.splitlines()  # nothing but the count: no row moved, no table left out
    rows = sum(len(pd.read_csv(tables[0] / f"{name}.csv")) for name in names)
    assert f": {rows} rows: {rows} identical, 0 within uncertainty, 0 different, 0 other inputs, 0 missing" in summary


def _browser():
    """Headless Debian chromium through selenium (CI installs both), or skip with the reason."""
    chromium, driver = shutil.which("chromium"), shutil.which("chromedriver")
    if not (chromium and driver):
        if os.environ.get("ROLLOUT_REQUIRE_BROWSER"):
            pytest.fail("chromium and chromedriver are required here (apt-get install chromium chromium-driver)")
        pytest.skip("no chromium / chromedriver (apt-get install chromium chromium-driver)")
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = chromium
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1400,1000",
    ):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(driver), options=options)


@pytest.mark.slow
def test_the_html_report_renders_in_a_browser(local_runs, tmp_path):
    """The report is a web page: its categories open, and every figure and table in them renders."""
    from PIL import Image
    from selenium.common.exceptions import (
        ElementClickInterceptedException,
        NoSuchElementException,
        StaleElementReferenceException,
    )
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    a = local_runs[0].workdir
    report = tmp_path / "report.html"
    res = snakemake(a, "--cores", "2", "--report", str(report), "offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    browser = _browser()
    wait = WebDriverWait(browser, 60)

    def open_entry(category: str, name: str) -> None:
        """Open the report's entry ``name`` of ``category``: click the category, then the entry's eye. The
        category is clicked again for as long as its entries are not there: on a loaded machine a click can come
        before the page's script listens and be lost (the entries then never appear), or another element can lie
        over the target for a moment (Chromium's "element click intercepted"); both are retried until the wait
        times out."""

        def attempt(b):
            try:
                eyes = b.find_elements(By.XPATH, f"//td[contains(text(), '{name}')]/..//a[@iconname='eye']")
                target = eyes[0] if eyes else b.find_element(By.LINK_TEXT, category)
                # into the middle of the view first: not under the report's fixed header or at the window's edge
                b.execute_script("arguments[0].scrollIntoView({block: 'center'});", target)
                target.click()
            except (NoSuchElementException, ElementClickInterceptedException, StaleElementReferenceException):
                return False
            return bool(eyes)

        wait.until(attempt, message=f"the report's entry {name} of {category} never opened")

    try:
        seen = {}
        for category, files in (
            ("Figures", ("depth.png", "slack.png", "rollout.png", "heatmap.png")),
            ("Tables", ("claims.html", "model_rates.html", "depth_rates.html", "rollout_summary.html", "ftt.html")),
            ("Baseline", ("baseline_rate.png",)),
        ):
            for name in files:
                browser.get(report.as_uri())
                open_entry(category, name)
                if name.endswith(".png"):  # the figure itself, decoded by the browser
                    image = wait.until(
                        lambda b: [
                            i
                            for i in b.find_elements(By.TAG_NAME, "img")
                            if (i.get_attribute("src") or "").startswith("data:image/png")
                        ]
                    )[0]
                    assert int(image.get_attribute("naturalWidth")) > 300, name
                else:  # the table, in its own frame
                    frame = wait.until(lambda b: b.find_elements(By.TAG_NAME, "iframe"))[0]
                    browser.switch_to.frame(frame)
                    cells = wait.until(lambda b: b.find_elements(By.TAG_NAME, "td"))
                    seen[name] = [c.text for c in cells]
                    browser.switch_to.default_content()
                shot = tmp_path / f"{category}-{name}.png"
                browser.save_screenshot(str(shot))
                pixels = np.asarray(Image.open(shot).convert("L"), dtype=float)
                assert pixels.std() > 10, f"{name}: the page looks blank"
        assert TINY["claims"]["baseline"]["text"] in seen["claims.html"]
        assert "minilm" in seen["model_rates.html"]
    finally:
        browser.quit()


@pytest.mark.slow
def test_slurm_profile_runs_the_offline_suite_like_a_local_run(local_runs):
    """The second run, when it went through profiles/slurm: every compute job was a SLURM job that exited 0, every
    local rule (downloads, tables, figures) ran on the submitting host, and every output equals the 2-core
    local run's bytes (compared by the tests above)."""
    run = local_runs[1]
    if run.slurm is None:
        pytest.skip(f"cannot start SLURM here ({run.why_local}): the second run was local")
    workdir, out = run.workdir, run.output
    ids = re.findall(r"has been submitted with SLURM jobid (\d+)", out)
    assert len(set(ids)) == len(ids), out[-3000:]
    logs = list((workdir / ".snakemake/slurm_logs").rglob("*.log"))
    assert sorted(p.stem for p in logs) == sorted(ids)
    rules = {p.relative_to(workdir / ".snakemake/slurm_logs").parts[0] for p in logs}
    compute = {"measure", "train_ftt", "measure_ftt", "random_baseline", "simulate_dynamics", "unroll_albert"}
    assert rules == {f"rule_{name}" for name in compute}, rules
    for name in ("measure", "train_ftt", "measure_ftt"):  # one job each per experiment, model and seed
        assert len(list((workdir / f".snakemake/slurm_logs/rule_{name}").rglob("*.log"))) == len(
            list((workdir / f"results/logs/{name}").rglob("*.log"))
        ), name
    assert "localrule write_suite_tables:" in out and "localrule prepare_model:" in out, out[-3000:]
    controller = (run.slurm / "slurmctld.log").read_text()
    for job in ids:
        assert f"_job_complete: JobId={job} WEXITSTATUS 0" in controller
    local = local_runs[0].workdir
    assert deterministic_outputs(workdir) == [o for o in deterministic_outputs(local) if o != PAPER_ONLY]
    print(f"offline suite and dynamics study: SLURM {run.seconds:.0f} s with {len(ids)} jobs")


def rollout_equality(workdir: Path, *args: str, cache: Path) -> subprocess.CompletedProcess:
    """The command line, `python -m rollout_equality ARGS`, run in ``workdir`` (its config.yaml is the one read)."""
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "ROLLOUT_EQUALITY_CACHE": str(cache)}
    cmd = [sys.executable, "-m", "rollout_equality", *args]
    return subprocess.run(cmd, cwd=workdir, env=env, capture_output=True, text=True, timeout=900)


def _digests(workdir: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(workdir)): p.read_bytes()
        for folder in ("resources", "results")
        for p in sorted((workdir / folder).rglob("*"))
        if p.is_file()
    }


@pytest.mark.slow
def test_the_command_line_measures_what_rule_measure_measured_and_writes_nothing_else(run_a, tmp_path):
    """After a workflow run, `measure --model resources/models/<name> --data resources/data/<set>` and
    `--model <config name>` give the workflow's records byte for byte (rows and provenance): the head-averaged
    records, their rollout, and the heads file and its rollout, which the tiny config's `analysis` asks for
    (per head, fusions mean, max and min: the command line resolves it for each experiment as the workflow does).
    With the heads analysis turned off by flags, the head-averaged records are still the workflow's bytes and the
    heads files hold no rows. They read the working directory's config.yaml, say what they found and wrote, and
    leave resources/ and results/ as they were, so that Snakemake has nothing more to do than before."""
    from rollout_equality.config.paths import HEADS, HEADS_ROLLOUT, RECORDS, ROLLOUT, companions

    a = run_a
    before, plan = _digests(a), snakemake(a, "-n", "offline", config=TINY)
    assert plan.returncode == 0, plan.stderr[-2000:]
    assert all(TINY["analysis"]["suites"]["offline"][key] for key in ("per_head", "fusions"))
    runs = [(f"resources/models/{e['model']}", e["model"], e["dataset"], ()) for e in TINY["suites"]["offline"]]
    runs.append(("minilm", "minilm", "pydoc", ()))  # a model of the config by name
    runs.append(("minilm", "minilm", "pydoc", ("--no-per-head", "--fusions", "mean")))  # the heads analysis off
    for k, (model, name, dataset, flags) in enumerate(runs):
        out = tmp_path / f"{k}.parquet"
        res = rollout_equality(
            a, "measure", "--model", model, "--data", f"resources/data/{dataset}", "--out", str(out), *flags,
            cache=tmp_path,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
        assert "config: config.yaml" in res.stderr  # the working directory's
        assert re.search(r"holds in \d+\.\d% \(content tokens\) and \d+\.\d% \(all tokens\)", res.stdout)
        beside = companions(str(out))
        assert f"wrote {out} and {beside['rollout']}; {beside['heads']} and {beside['heads_rollout']}" in res.stdout
        workflow = {key: a / t.format(model=name, dataset=dataset) for key, t in (
            ("records", RECORDS), ("rollout", ROLLOUT), ("heads", HEADS), ("heads_rollout", HEADS_ROLLOUT))}  # fmt: skip
        mine = {"records": out, **{key: Path(path) for key, path in beside.items()}}
        same = ("records", "rollout") if flags else tuple(workflow)
        assert {key: mine[key].read_bytes() for key in same} == {key: workflow[key].read_bytes() for key in same}
        if flags:  # the heads analysis off: its files hold no rows, the workflow's hold the per-head and fused rows
            assert pd.read_parquet(mine["heads"]).empty and pd.read_parquet(mine["heads_rollout"]).empty
            assert set(pd.read_parquet(workflow["heads_rollout"])["fusion"]) == {"max", "min"}
        else:
            assert pd.read_parquet(mine["heads"])["head"].notna().any(), model
    assert _digests(a) == before
    again = snakemake(a, "-n", "offline", config=TINY)
    assert again.returncode == 0 and again.stdout.count("rule ") == plan.stdout.count("rule "), again.stdout[-2000:]
    assert not (tmp_path / "minilm").exists()  # a prepared model is read where it is, not prepared again


@pytest.mark.slow
def test_the_librarys_call_on_minilms_own_attentions_gives_the_records_rule_measure_wrote(run_a):
    """The tiny run's MiniLM on pydoc, read as a user's own code reads it (the prepared model folder loaded by
    transformers with eager attention, output_attentions and the tokenizer's encoding passed to
    rollout_equality.attention_records, batches as the config forms them), gives rule measure's four records files
    row for row, bit for bit (tests/condition/test_from_model.py checks it in-process, through rule measure's
    function)."""
    from model_attention import text_records

    from rollout_equality.acquire.data import load_inputs
    from rollout_equality.acquire.models import read_model_info
    from rollout_equality.condition.records import read_records
    from rollout_equality.config.checks import experiment_analysis
    from rollout_equality.config.load import load_config
    from rollout_equality.config.paths import HEADS, HEADS_ROLLOUT, MODEL_INFO, RECORDS, ROLLOUT
    from rollout_equality.config.settings import Condition, Extraction, HeadSettings

    config = load_config([str(REPO / ".test" / "config.yaml")])
    info = read_model_info(run_a / MODEL_INFO.format(model="minilm"))
    ids, texts, _ = load_inputs(run_a / "resources/data/pydoc")
    heads = HeadSettings.from_config(experiment_analysis(config, "minilm", "pydoc"))
    extraction, condition = from_section(Extraction, config["extraction"]), from_section(Condition, config["condition"])
    mine = text_records(info["path"], ids, texts, "minilm", "pydoc", extraction, condition, heads)
    files = (RECORDS, ROLLOUT, HEADS, HEADS_ROLLOUT)
    for (kind, frame), path in zip(mine.items(), files):
        written = read_records(run_a / path.format(model="minilm", dataset="pydoc"))
        assert len(written), kind
        pd.testing.assert_frame_equal(frame, written, check_exact=True)


@pytest.mark.slow
def test_a_moved_run_has_nothing_to_do_names_no_old_path_and_reads_its_own_files(run_a, tmp_path):
    """A finished run copied (times kept) and moved with `mv`: Snakemake has nothing to do in the new place, no file
    under resources/ names where the run was made, and the command line on a moved prepared model reads the moved
    files, with the original renamed away so that a read of it would fail."""
    plan = snakemake(run_a, "-n", "offline", config=TINY)
    assert "Nothing to be done" in plan.stdout, plan.stdout[-2000:]
    copied, moved = tmp_path / "copied", tmp_path / "elsewhere" / "moved"
    shutil.copytree(run_a, copied, symlinks=True)  # copy2: modification times kept, as mv keeps them
    moved.parent.mkdir()
    subprocess.run(["mv", str(copied), str(moved)], check=True)
    named = [
        str(p.relative_to(moved))
        for p in (moved / "resources").rglob("*")
        if p.is_file() and any(str(old).encode() in p.read_bytes() for old in (run_a, copied))
    ]
    assert named == []
    away = run_a.with_name(run_a.name + "-away")
    run_a.rename(away)
    try:
        again = snakemake(moved, "-n", "offline", config=TINY)
        assert again.returncode == 0 and "Nothing to be done" in again.stdout, again.stdout[-2000:]
        for k, e in enumerate(TINY["suites"]["offline"]):
            out = tmp_path / f"{k}.parquet"
            res = rollout_equality(
                moved, "measure", "--model", f"resources/models/{e['model']}", "--data",
                f"resources/data/{e['dataset']}", "--out", str(out), cache=tmp_path / "cache",
            )  # fmt: skip
            assert res.returncode == 0, res.stderr[-3000:]
            assert out.read_bytes() == (moved / f"results/records/{e['model']}/{e['dataset']}.parquet").read_bytes()
        assert not (tmp_path / "cache").exists()  # read where they are, none prepared again
    finally:
        away.rename(run_a)


@pytest.mark.slow
def test_an_edited_input_stops_measure_naming_it_and_no_records_are_written(run_a, tmp_path):
    """One word of a prepared text segment edited by hand: rule measure stops before the model runs, naming the file
    and the rule to rerun, and writes no records (they would claim the manifest of the original text)."""
    work = tmp_path / "run"
    shutil.copytree(run_a / "resources", work / "resources", symlinks=True)
    segments = work / "resources/data/pydoc/segments.jsonl"
    lines = segments.read_text().splitlines()
    first = json.loads(lines[0])
    first["text"] = first["text"].replace(first["text"].split()[1], "edited", 1)
    segments.write_text("\n".join([json.dumps(first), *lines[1:]]) + "\n")
    res = snakemake(work, "--cores", "2", "results/records/minilm/pydoc.parquet", config=TINY)
    assert res.returncode != 0
    log = (work / "results/logs/measure/minilm/pydoc.log").read_text()
    assert f"segment {first['id']} differs from the text prepared in" in log and "prepare_data" in log, log[-2000:]
    assert not (work / "results/records/minilm").exists()


@pytest.mark.slow
def test_the_site_profile_keeps_every_resource_of_profiles_slurm_on_a_real_slurm(local_runs, tmp_path):
    """docs/cluster.md's way: ``rollout-equality slurm-profile`` with a partition, no account and a GPU partition,
    then ``snakemake --profile <site> <target>``. The one measure job SLURM ran carries profiles/slurm's measure
    resources (8 CPUs, 24000 MB, 240 min) and the site's GPU partition, as the controller reports them
    (``scontrol show job``). The node declares 8 CPUs and 32 GB whatever the host has (the harness's
    config_overrides): the request is what is checked, the job itself takes seconds."""
    if local_runs[1].slurm is None:
        pytest.skip(f"cannot start SLURM here ({local_runs[1].why_local})")
    site = make_site_profile(tmp_path / "site", "--partition", "debug", "--no-account", "--gpu-partition", "gpu")
    base = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())["set-resources"]["measure"]
    target = "results/records/tiny_timm_deit/photos.parquet"  # one measure job of the tiny config: seconds
    workdir = tmp_path / "run"
    workdir.mkdir()
    res = snakemake(
        workdir, "--profile", str(site), target, "--slurm-init-seconds-before-status-checks", "2", config=TINY
    )
    out = res.stdout + res.stderr
    assert res.returncode == 0, out[-5000:]
    ids = re.findall(r"SLURM jobid (\d+)", out)
    assert len(ids) == 1, out[-3000:]  # measure alone: preparing the model and the photos are local rules
    shown = subprocess.run(["scontrol", "show", "job", ids[0]], capture_output=True, text=True).stdout
    job = dict(re.findall(r"(\w+)=(\S+)", shown))
    assert job["JobState"] == "COMPLETED" and job["Partition"] == "gpu", shown
    assert int(job["NumCPUs"]) == base["cpus_per_task"] == 8, shown
    assert job["MinMemoryNode"] == "24000M" and base["mem_mb"] == "attempt * 24000", shown
    assert job["TimeLimit"] == "04:00:00" and base["runtime"] == 240, shown
    assert (workdir / target).exists()


@pytest.mark.parametrize(
    "extraction, training",
    [("cpu", "cuda"), ("cuda", "cpu"), ("cuda:0", "auto"), ("auto", "cuda:0")],  # each setting once for each
)
def test_the_slurm_profile_claims_a_gpu_exactly_where_the_device_setting_asks_for_one(tmp_path, extraction, training):
    """`snakemake -n` with a site profile made from profiles/slurm (the slurm executor's dry run needs no cluster): measure claims a GPU
    for extraction.device cuda[:N], train_ftt and measure_ftt for tabular.training.device cuda[:N]; cpu and auto
    (a GPU if the job's node shows one) claim none. The claim follows from the setting alone: the controller runs
    here with a torch that cannot be imported."""
    config = copy.deepcopy(TINY)
    config["extraction"]["device"] = extraction
    config["tabular"]["training"]["device"] = training
    no_torch = tmp_path / "no_torch" / "torch"
    no_torch.mkdir(parents=True)
    (no_torch / "__init__.py").write_text('raise ImportError("the workflow imported torch to plan its jobs")\n')
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(no_torch.parent), os.environ.get("PYTHONPATH")]))}
    site = make_site_profile(tmp_path / "site")  # profiles/slurm with a partition and no account (docs/cluster.md)
    res = snakemake(tmp_path, "-n", "--profile", str(site), "offline", config=config, env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    claims: dict[str, set[int]] = {}
    rule = None
    for line in res.stdout.splitlines():
        if line.startswith(("rule ", "localrule ")):
            rule = line.split()[1].rstrip(":")
        elif line.strip().startswith("resources:"):
            gpu = re.search(r"\bgpu=(\d+)", line)
            claims.setdefault(rule, set()).add(int(gpu.group(1)) if gpu else 0)

    def claim(device):
        return {1 if device.startswith("cuda") else 0}

    expected = {"measure": claim(extraction), "train_ftt": claim(training), "measure_ftt": claim(training)}
    assert {r: claims[r] for r in expected} == expected
    assert all(claims[r] == {0} for r in claims if r not in expected), claims


def test_a_gpu_claim_follows_from_the_setting_alone():
    assert [gpu_claim(d) for d in ("cpu", "auto", "cuda", "cuda:0", "cuda:3")] == [0, 0, 1, 1, 1]
    with pytest.raises(ValueError, match="device must be auto, cpu or cuda"):
        gpu_claim("gpu")


@pytest.mark.slow
def test_offline_per_head_records_tables_and_figure(run_a):
    """The tiny run's analysis (per head and the max / min fusions, .test/config.yaml) writes MiniLM's per-head
    records (6 layers x 12 heads), the fused rows and rollouts, and the suite's head tables and figure."""
    a = run_a
    heads = pd.read_parquet(a / "results/records/minilm/pydoc.heads.parquet")
    records = pd.read_parquet(a / "results/records/minilm/pydoc.parquet")
    per_head = heads[heads["head"].notna()]
    assert len(per_head) == len(records) * 12 and set(per_head["head"]) == set(range(12))
    assert set(heads["fusion"].dropna()) == {"max", "min"} and (heads["holds"] == heads["holds_direct"]).all()
    fused_rollout = pd.read_parquet(a / "results/records/minilm/pydoc.heads.rollout.parquet")
    assert len(fused_rollout) == 2 * len(pd.read_parquet(a / "results/records/minilm/pydoc.rollout.parquet"))
    assert len(pd.read_parquet(a / "results/records/ftt/cancer/seed0.heads.parquet")) == 10 * 3 * 2 * (8 + 2)
    rates = pd.read_csv(a / "results/tables/offline/head_rates.csv")
    assert set(rates["model"]) == {"minilm", "tiny_dinov2_reg", "tiny_timm_deit", "ftt_seed0"}
    minilm = rates[(rates["model"] == "minilm") & (rates["token_set"] == "content")].iloc[0]
    assert minilm["triples"] == 3 * 6 * 12 and minilm["ci_low"] <= minilm["rate"] <= minilm["ci_high"]
    fusions = pd.read_csv(a / "results/tables/offline/fusion_rates.csv")
    assert fusions[fusions["model"] == "minilm"]["fusion"].tolist() == ["mean", "max", "min"] * 2
    model_rates = pd.read_csv(a / "results/tables/offline/model_rates.csv")
    mean = fusions[fusions["fusion"] == "mean"].merge(model_rates, on=["model", "dataset", "token_set"])
    assert (mean["rate_x"] == mean["rate_y"]).all()  # mean is the head-averaged records' rate
    assert set(pd.read_csv(a / "results/tables/offline/head_agreement.csv")["pairs"]) == {
        3 * 6,
        3 * 2,
        2 * 12,
        10 * 3,
    }  # DeiT: its 2 inputs
    assert (a / "paper/figures/offline/heads.png").stat().st_size > 5000


@pytest.mark.slow
def test_supervision_offline_trains_measures_and_reports_the_tiny_study(tmp_path):
    """The tiny supervision study end to end (one epoch of each objective on 200 digits, one seed, 40 test digits):
    the real training, preparation, measuring and report; `rollout-equality compare` reads its tables folder."""
    from rollout_equality.reporting.compare import compare

    res = snakemake(tmp_path, "--cores", "2", "supervision_offline", config=TINY)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    tables = tmp_path / "results/tables/supervision"
    scores = pd.read_csv(tables / "supervision_scores.csv")
    assert scores["objective"].tolist() == ["init", "supervised", "dino"]
    assert (scores["n_train"] == 200).all() and (scores["n_test"] == 40).all()
    assert scores["knn_accuracy"].between(0, 1).all() and scores["test_accuracy"].notna().tolist() == [
        False,
        True,
        False,
    ]
    depth = pd.read_csv(tables / "supervision_depth.csv")
    assert len(depth) == 3 * 2 * 6 and (depth["pairs"] == 40).all()  # objectives × token sets × layers
    heads = pd.read_csv(tables / "supervision_heads.csv")
    assert set(heads["attention"]) == {"per head", "max", "min"}
    assert (heads.loc[heads["attention"] == "per head", "pairs"] == 40 * 4).all()  # 4 heads
    checkpoints = pd.read_csv(tables / "supervision_checkpoints.csv")
    assert set(checkpoints["file"]) == {"config.json", "model.safetensors", "training.json"}
    assert len(checkpoints) == 9 and checkpoints["sha256"].str.fullmatch("[0-9a-f]{64}").all()
    assert set(checkpoints["code_path"]) == {"compatible"} and (checkpoints["cpu"].str.len() > 0).all()
    info = json.loads((tmp_path / "resources/models/supervision_dino_s0/model.json").read_text())
    assert info["source"] == "local" and "training.json" in info["files"]
    assert (tmp_path / "results/records/supervision_dino_s0/digits_test.heads.parquet").is_file()
    result = compare(tables, tables)
    assert result.status == 0 and {row.table for row in result.rows} >= {
        "model_rates",
        "depth_rates",
        "supervision_depth",
        "supervision_heads",
        "supervision_seeds",
        "supervision_late",
        "supervision_contrast",
        "supervision_scores",
    }
    assert (tmp_path / "paper/figures/supervision/depth.png").stat().st_size > 5000
    assert "the paper's contrast" in (tables / "sentences.md").read_text().lower()
