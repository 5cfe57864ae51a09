"""Bad input on the cluster and GPU paths of docs/cluster.md and docs/gpu.md, run as written (not ``-n``): it stops
while the workflow is read, before any job: a profile left with its placeholders, profiles/gpu on a host without a
GPU, a target that names nothing. A site profile's jobs on a real SLURM: tests/workflow/test_workflow.py
(``test_the_site_profile_keeps_every_resource_of_profiles_slurm_on_a_real_slurm``, on the SLURM its runs start)."""

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import REPO

TINY = yaml.safe_load((REPO / ".test" / "config.yaml").read_text())
WOULD_BE_REFUSED = "Warning: this dry run plans jobs that a real run on this host would refuse: "


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
    said = planned.stdout + planned.stderr  # Snakemake's logger: either stream, by version
    assert WOULD_BE_REFUSED in said and "this host has no NVIDIA driver" in said
    measure = planned.stdout.split("rule measure:")[1].split("\n\n")[0]
    assert "gpu=1" in measure and f"threads: {len(os.sched_getaffinity(0))}" in measure, measure
    assert "gpu=1" in planned.stdout.split("rule train_ftt:")[1].split("\n\n")[0]
    res = snakemake(workdir, "--profile", "profiles/gpu", "offline", overlay=False)
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "extraction.device: cuda and tabular.training.device: cuda ask for a CUDA GPU" in out
    assert "this host has no NVIDIA driver" in out and "rule " not in out
    assert sorted(p.name for p in workdir.iterdir() if p.name != ".snakemake") == ["config.yaml"]


def test_a_dry_run_on_the_gpu_overlay_warns_that_the_run_would_be_refused(tmp_path):
    """overlays/gpu.yaml on a host without an NVIDIA driver: a dry run plans every job (a plan is what it is asked for)
    and warns, with the reason the real run gives; without the overlay it does not warn."""
    from rollout_equality.runtime.device import nvidia_driver

    if nvidia_driver() is not None:
        pytest.skip("this host has an NVIDIA driver: the warning is of a host without one")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
    gpu = [str(tmp_path / "config.yaml"), str(REPO / "overlays/gpu.yaml")]
    planned = snakemake(tmp_path, "--cores", "2", "offline", "-n", "--configfile", *gpu, overlay=False)
    assert planned.returncode == 0, planned.stderr[-3000:]
    warning = next(line for line in (planned.stdout + planned.stderr).splitlines() if WOULD_BE_REFUSED in line)
    assert "extraction.device: cuda and tabular.training.device: cuda ask for a CUDA GPU" in warning
    assert "rule measure:" in planned.stdout and "gpu=1" in planned.stdout.split("rule measure:")[1].split("\n\n")[0]
    on_cpus = snakemake(tmp_path, "--cores", "2", "offline", "-n")
    assert on_cpus.returncode == 0 and WOULD_BE_REFUSED not in on_cpus.stdout + on_cpus.stderr, on_cpus.stderr[-3000:]


def cluster_gpu_block() -> list[str]:
    """docs/cluster.md's commands for GPUs (its section "With GPUs"), as written."""
    text = (REPO / "docs/cluster.md").read_text().split("## With GPUs", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    return [re.split(r"\s{2,}#", line)[0].strip() for line in block.splitlines() if line.strip()]


def test_the_documented_gpu_block_plans_every_gpu_job_in_the_gpu_partition_dry(tmp_path):
    """docs/cluster.md's GPU block, as written (the site's names filled in; the tiny config's offline suite for its
    target, as a dry run plans it): every job that claims a GPU is planned in the GPU partition, measure among them,
    and no planned job claims a GPU elsewhere. Without the block's --gpu-rules the check finds FT-Transformer's
    jobs claiming a GPU in the CPU partition."""
    make, run = [c for c in cluster_gpu_block() if "slurm-profile" in c or "--profile profiles/site" in c][:2]
    words = shlex.split(make.replace("<partition>", "debug").replace("<account>", "lab"))
    words = [w.replace("<gpu-partition>", "gpu") for w in words]
    assert words[0] == ".venv/bin/rollout-equality" and words[1] == "slurm-profile", make
    site = tmp_path / "site"
    made = subprocess.run(
        [sys.executable, "-m", "rollout_equality", *words[1:-2], "--base", str(REPO / "profiles/slurm/config.yaml")]
        + ["--out", str(site)],
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    run_words = shlex.split(run)
    assert run_words[:3] == [".venv/bin/snakemake", "--profile", "profiles/site"], run
    overlays = [str(REPO / w) for w in run_words[run_words.index("--configfile") + 1 :]]
    assert overlays == [str(REPO / "overlays/gpu.yaml")], run

    def planned(profile: Path) -> list[dict[str, str]]:
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(TINY, sort_keys=False))
        res = snakemake(
            tmp_path, "--profile", str(profile), "offline", "-n", "--configfile", str(tmp_path / "config.yaml"),
            *overlays, overlay=False,
        )  # fmt: skip
        assert res.returncode == 0, res.stderr[-3000:]
        assert WOULD_BE_REFUSED not in res.stdout + res.stderr  # a cluster run is not checked on the submitting host
        jobs = []
        for block in res.stdout.split("\nrule ")[1:]:
            resources = re.search(r"^\s+resources: (.*)$", block, flags=re.M)
            found = dict(r.split("=", 1) for r in resources.group(1).split(", ")) if resources else {}
            jobs.append({"rule": block.split(":", 1)[0], **found})
        return jobs

    def misplaced(jobs: list[dict[str, str]]) -> list[str]:
        return sorted({j["rule"] for j in jobs if j.get("gpu", "0") != "0" and j.get("slurm_partition") != "gpu"})

    jobs = planned(site)
    on_gpu = {j["rule"] for j in jobs if j.get("gpu") == "1" and j.get("slurm_partition") == "gpu"}
    assert "measure" in on_gpu and misplaced(jobs) == [], (on_gpu, misplaced(jobs))
    # the same overlay through a site profile made without the block's --gpu-rules: FT-Transformer's jobs claim a GPU
    # in the CPU partition, and the check says so
    bare = [w for w in words[1:-2] if w not in ("train_ftt", "measure_ftt")]
    subprocess.run(
        [sys.executable, "-m", "rollout_equality", *bare, "--base", str(REPO / "profiles/slurm/config.yaml")]
        + ["--out", str(tmp_path / "bare")],
        check=True,
        capture_output=True,
    )
    assert misplaced(planned(tmp_path / "bare")) == ["measure_ftt", "train_ftt"]


def test_a_misspelt_target_is_refused_before_any_job(tmp_path):
    res = snakemake(tmp_path, "--cores", "1", "ofline")
    out = res.stdout + res.stderr
    assert res.returncode != 0 and "no target 'ofline': give a target rule (all, offline," in out, out[-2000:]
    assert "Building DAG" not in out and not (tmp_path / "results").exists()
