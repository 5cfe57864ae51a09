"""The Snakemake workflow: config validation, lint, and an end-to-end offline run."""

import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rollout_equality.baseline import random_baseline

REPO = Path(__file__).resolve().parents[1]
TINY = {
    "condition": {"atol": 1e-9, "row_sum_atol": 1e-5},
    "baseline": {"seed": 3, "trials": 120, "ns": [3, 8, 17], "chunk_size": 50},
}


def snakemake(workdir: Path, *args: str, config: dict | None = None) -> subprocess.CompletedProcess:
    """Run `python -m snakemake` on this repository's Snakefile in ``workdir``."""
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    if config is not None:
        cfg = workdir / "config.yaml"
        cfg.write_text(yaml.safe_dump(config))
        cmd += ["--configfile", str(cfg)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "SOURCE_DATE_EPOCH": "0"}
    return subprocess.run(cmd + list(args), cwd=workdir, env=env, capture_output=True, text=True, timeout=900)


def test_lint_passes(tmp_path):
    res = snakemake(tmp_path, "--lint", config=TINY)
    assert res.returncode == 0, res.stdout + res.stderr


def test_repository_config_is_valid(tmp_path):
    res = snakemake(tmp_path, "-n", "all", config=yaml.safe_load((REPO / "config.yaml").read_text()))
    assert res.returncode == 0, res.stderr
    assert "random_baseline" in res.stdout


@pytest.mark.parametrize(
    "mutate, named",
    [
        (lambda c: c["baseline"].update(trails=10), "trails"),
        (lambda c: c.update(baselin={}), "baselin"),
        (lambda c: c["baseline"].update(trials="many"), "instance['baseline']['trials']"),
        (lambda c: c["condition"].update(atol=-1), "instance['condition']['atol']"),
        (lambda c: c["baseline"].update(ns=[1, 5]), "instance['baseline']['ns'][0]"),
    ],
)
def test_bad_config_fails_naming_the_key(tmp_path, mutate, named):
    config = yaml.safe_load(yaml.safe_dump(TINY))
    mutate(config)
    res = snakemake(tmp_path, "-n", config=config)
    out = res.stdout + res.stderr
    assert res.returncode != 0
    assert "ValidationError" in out and named in out, out


@pytest.mark.slow
def test_offline_suite_end_to_end_is_deterministic(tmp_path):
    runs = []
    for name in ("a", "b"):
        workdir = tmp_path / name
        workdir.mkdir()
        res = snakemake(workdir, "--cores", "2", "offline", config=TINY)
        assert res.returncode == 0, res.stdout + res.stderr
        runs.append(workdir)
    a, b = runs

    table = pd.read_csv(a / "results/baseline/random_baseline.csv")
    expected = random_baseline([3, 8, 17], trials=120, seed=3, chunk_size=50, show_progress=False)
    pd.testing.assert_frame_equal(table, expected, check_exact=False, atol=1e-6)

    tex = (a / "paper/tables/baseline.tex").read_text()
    assert "\\toprule" in tex and "\\bottomrule" in tex and tex.count("\\\\") == 4  # header + 3 rows
    for figure in ("baseline_rate.pdf", "baseline_rate.png"):
        assert (a / "paper/figures" / figure).stat().st_size > 5000
    log = (a / "results/logs/random_baseline.log").read_text()
    assert "random baseline" in log and "n=17:" in log  # progress bar and summary went to the log

    for rel in ("results/baseline/random_baseline.csv", "paper/tables/baseline.tex", "paper/figures/baseline_rate.pdf"):
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), f"{rel} differs between identical runs"
