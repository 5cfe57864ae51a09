"""Bad input on the cluster and GPU paths of docs/cluster.md and docs/gpu.md, run as written (not ``-n``): it stops
while the workflow is read, before any job: a profile left with its placeholders, profiles/gpu on a host without a
GPU, a target that names nothing. A site profile's jobs on a real SLURM: tests/workflow/test_workflow.py
(``test_the_site_profile_keeps_every_resource_of_profiles_slurm_on_a_real_slurm``, on the SLURM its runs start)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

TINY = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())


def snakemake(workdir: Path, *args: str, cwd: Path = REPO, overlay: bool = True) -> subprocess.CompletedProcess:
    """``snakemake ARGS`` as a reader types it in the checkout (``cwd``), the tiny config run in ``workdir``: as the
    config the Snakefile reads there (``overlay=False``: a profile's own ``configfile:`` overlays it) or as an
    overlay on the command line."""
    (workdir / "config.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(workdir)]
    cmd += [*(["--configfile", str(workdir / "config.yaml")] if overlay else []), *args]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PWD": str(cwd)}
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("filled", [(), ("partition",)])
def test_a_profile_with_a_placeholder_left_is_refused_before_anything_is_submitted(tmp_path, filled):
    """profiles/slurm as it ships (and a copy with only its partition filled in): a real run (not ``-n``) stops while
    the workflow is read, naming the profile's file and every key still a placeholder, and saying how to make a site
    profile; no job ran, nothing was written, nothing was submitted."""
    profile = REPO / "profiles/slurm"
    if filled:
        text = (profile / "config.yaml").read_text().replace('"<partition>"', "debug")
        profile = tmp_path / "half"
        profile.mkdir()
        (profile / "config.yaml").write_text(text)
    workdir = tmp_path / "run"
    workdir.mkdir()
    res = snakemake(workdir, "--profile", str(profile.relative_to(REPO) if not filled else profile), "offline")
    out = res.stdout + res.stderr
    assert res.returncode != 0, out[-3000:]
    assert f"{profile / 'config.yaml'}" in out or f"{REPO / profile / 'config.yaml'}" in out, out[-3000:]
    assert "default-resources: slurm_account is '<account>'" in out
    assert ("default-resources: slurm_partition is '<partition>'" in out) == (not filled)
    assert "rollout-equality slurm-profile --partition" in out
    assert "SLURM jobid" not in out and "Submitted" not in out and "rule " not in out
    assert sorted(p.name for p in workdir.iterdir() if p.name != ".snakemake") == ["config.yaml"]


def test_the_gpu_profile_plans_one_gpu_per_job_and_is_refused_on_a_host_without_one(tmp_path):
    """profiles/gpu (which reads overlays/gpu.yaml): planned, measure and train_ftt claim one GPU each of the host's,
    measure's threads are the host's cores shared among its GPUs; run for real on a host without an NVIDIA driver
    (this one, CI's), it stops while the workflow is read, naming the settings and what to do, nothing run."""
    from rollout_equality.runtime.device import nvidia_driver

    if nvidia_driver() is not None:
        pytest.skip("this host has an NVIDIA driver: the refusal is of a host without one")
    workdir = tmp_path / "run"
    workdir.mkdir()
    planned = snakemake(workdir, "--profile", "profiles/gpu", "offline", "-n", overlay=False)
    assert planned.returncode == 0, planned.stderr[-3000:]
    measure = planned.stdout.split("rule measure:")[1].split("\n\n")[0]
    assert "gpu=1" in measure and f"threads: {len(os.sched_getaffinity(0))}" in measure, measure
    assert "gpu=1" in planned.stdout.split("rule train_ftt:")[1].split("\n\n")[0]
    res = snakemake(workdir, "--profile", "profiles/gpu", "offline", overlay=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "extraction.device: cuda and tabular.training.device: cuda ask for a CUDA GPU" in out
    assert "this host has no NVIDIA driver" in out and "rule " not in out
    assert sorted(p.name for p in workdir.iterdir() if p.name != ".snakemake") == ["config.yaml"]


def test_a_misspelt_target_is_refused_before_any_job(tmp_path):
    res = snakemake(tmp_path, "--cores", "1", "ofline")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "no target 'ofline': give a target rule (all, offline," in out, out[-2000:]
    assert "Building DAG" not in out and not (tmp_path / "results").exists()
