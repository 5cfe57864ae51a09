"""The site profile made from profiles/slurm keeps every key of it, and a profile left with a placeholder is
refused naming its file and key (rollout_equality.config.profiles); the real SLURM run of a site profile is
tests/workflow/test_cluster.py."""

import pytest
import yaml
from conftest import REPO

from rollout_equality.config import profiles

BASE = yaml.safe_load((REPO / "profiles/slurm/config.yaml").read_text())


def test_the_site_profile_is_profiles_slurm_with_the_site_s_values():
    site = profiles.site_profile(BASE, partition="cpu", account="lab", gpu_partition="gpu")
    assert site["default-resources"] == {**BASE["default-resources"], "slurm_partition": "cpu", "slurm_account": "lab"}
    assert site["set-resources"]["measure"] == {**BASE["set-resources"]["measure"], "slurm_partition": "gpu"}
    assert {k: v for k, v in site["set-resources"].items() if k != "measure"} == {
        k: v for k, v in BASE["set-resources"].items() if k != "measure"
    }
    assert {k: v for k, v in site.items() if k not in ("default-resources", "set-resources")} == {
        k: v for k, v in BASE.items() if k not in ("default-resources", "set-resources")
    }
    none = profiles.site_profile(BASE, partition="cpu", account=None, gpu_rules=("measure", "train_ftt"))
    assert none["slurm-no-account"] is True and "slurm_account" not in none["default-resources"]
    assert none["set-resources"] == BASE["set-resources"]  # no GPU partition given: the rules as they are
    assert profiles.placeholders(BASE) == [
        ("default-resources: slurm_partition", "<partition>"),
        ("default-resources: slurm_account", "<account>"),
    ]
    with pytest.raises(profiles.ProfileError, match="the partition '<partition>' is not a site's value"):
        profiles.site_profile(BASE, partition="<partition>", account="lab")


def test_a_profile_named_on_the_command_line_with_a_placeholder_is_refused(tmp_path):
    argv = ["snakemake", "--profile", "profiles/slurm", "offline"]
    with pytest.raises(profiles.ProfileError, match=r"profiles/slurm/config.yaml: default-resources: slurm_partition"):
        profiles.check_profiles(argv, {"PWD": str(REPO)})
    (tmp_path / "site").mkdir()
    site = profiles.site_profile(BASE, partition="cpu", account="lab")
    (tmp_path / "site/config.yaml").write_text(yaml.safe_dump(site))
    profiles.check_profiles(["snakemake", f"--profile={tmp_path / 'site'}"], {})  # filled: nothing to say
    profiles.check_profiles(["snakemake", "--cores", "1"], {"SNAKEMAKE_PROFILE": str(tmp_path / "site")})
    with pytest.raises(profiles.ProfileError):
        profiles.check_profiles(["snakemake"], {"SNAKEMAKE_PROFILE": str(REPO / "profiles/slurm")})


def test_the_executor_of_a_command_line():
    env = {"PWD": str(REPO)}
    assert profiles.executor(["snakemake", "--cores", "2"], env) == "local"
    assert profiles.executor(["snakemake", "--profile", "profiles/slurm"], env) == "slurm"
    assert profiles.executor(["snakemake", "--profile", "profiles/gpu"], env) == "local"
    assert profiles.executor(["snakemake", "--executor", "slurm"], env) == "slurm"
    assert profiles.executor(["snakemake", "-e", "slurm-jobstep"], env) == "slurm-jobstep"


def test_a_target_that_names_nothing_is_named_with_the_targets_there_are():
    rules, shown = ["all", "offline", "measure"], ["all", "offline"]
    assert profiles.unknown_targets(["offline", "results/records/m/d.parquet", "x.pdf"], rules, shown) is None
    said = profiles.unknown_targets(["ofline", "all"], rules, shown)
    assert said.startswith("no target 'ofline': give a target rule (all, offline; README.md, Targets")
