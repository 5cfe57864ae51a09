"""Snakemake profiles: the site profile made from profiles/slurm, and the refusal of a profile left unfilled.

profiles/slurm/config.yaml holds every per-rule resource (``mem_mb``, ``runtime``, ``cpus_per_task``) and two
placeholders a site fills in: ``<partition>`` and ``<account>``. Snakemake replaces a profile's whole
``default-resources`` or ``set-resources`` when the command line (or a second, stacked ``--profile``) sets one entry
of it, so an override there loses the profile's other resources (measured with Snakemake 9.27: measure's 24000 MB,
240 min and 8 CPUs became 16000 MB, 60 min and 2 CPUs). The one way this project documents is a site profile:
:func:`site_profile` copies profiles/slurm with the site's partition, account and GPU partition filled in, every
other key as it is (``rollout-equality slurm-profile`` writes it). :func:`check_profiles` is the workflow's first
call: a profile named on the command line that still holds a placeholder stops the run before a job is submitted,
naming the file and the key.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

import yaml

PLACEHOLDER = re.compile(r"<[a-z][a-z-]*>")
GPU_RULES = ("measure",)  # the rules that claim a GPU with extraction.device: cuda (train_ftt, measure_ftt: tabular)


class ProfileError(ValueError):
    """A profile that cannot be used as it is: the message names its file, the key and what to do."""


def profile_file(profile: str | os.PathLike, bases: Sequence[str | os.PathLike] = (".",)) -> Path | None:
    """The YAML file of a ``--profile`` value given as a path (a folder holding ``config.yaml`` or the file itself),
    relative to the first of ``bases`` where it exists; None for a profile name Snakemake looks up elsewhere
    (``~/.config/snakemake``), which this project ships none of."""
    for base in bases:
        path = Path(base) / profile
        if path.is_file():
            return path
        for name in ("config.v9+.yaml", "profile.v9+.yaml", "config.yaml", "profile.yaml"):
            if (path / name).is_file():
                return path / name
    return None


def placeholders(profile: Mapping, prefix: str = "") -> list[tuple[str, str]]:
    """Every (key path, value) of a profile whose value is still a placeholder such as ``<partition>``."""
    found = []
    for key, value in profile.items():
        where = f"{prefix}{key}"
        if isinstance(value, Mapping):
            found += placeholders(value, where + ": ")
        elif isinstance(value, str) and PLACEHOLDER.search(value):
            found.append((where, value))
    return found


def named_profiles(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The ``--profile`` values of a Snakemake command line, or ``$SNAKEMAKE_PROFILE`` when it names none."""
    found = []
    for i, word in enumerate(argv):
        if word == "--profile" and i + 1 < len(argv):
            found.append(argv[i + 1])
        elif word.startswith("--profile="):
            found.append(word.split("=", 1)[1])
    if not found and environ.get("SNAKEMAKE_PROFILE"):
        found.append(environ["SNAKEMAKE_PROFILE"])
    return found


def check_profiles(argv: Sequence[str], environ: Mapping[str, str], checkout: str | os.PathLike = ".") -> None:
    """Raise :class:`ProfileError` when a profile the command line names still holds a placeholder (before Snakemake
    plans, let alone submits, a job). A relative profile path is read from the directory Snakemake was started in
    (``$PWD``: ``--directory`` has moved the process elsewhere by then), else from ``checkout`` (the Snakefile's)."""
    bases = [b for b in (environ.get("PWD"), os.getcwd(), checkout) if b]
    for profile in named_profiles(argv, environ):
        path = profile_file(profile, bases)
        if path is None:
            continue
        unfilled = placeholders(yaml.safe_load(path.read_text()) or {})
        if unfilled:
            keys = "; ".join(f"{key} is {value!r}" for key, value in unfilled)
            raise ProfileError(
                f"{path}: {keys}, a placeholder for your site. Make a site profile that keeps every resource of "
                f"{path} and fills them in, then run with it: rollout-equality slurm-profile --partition P "
                "--account A [--gpu-partition G] --out profiles/site; snakemake --profile profiles/site <target> "
                "(docs/cluster.md)"
            )


def site_profile(
    base: Mapping,
    *,
    partition: str,
    account: str | None,
    gpu_partition: str | None = None,
    gpu_rules: Sequence[str] = GPU_RULES,
) -> dict:
    """``base`` (profiles/slurm's mapping) with the site's values: ``slurm_partition`` and ``slurm_account`` of
    ``default-resources`` (``account=None``: ``slurm-no-account``, for sites without accounts), and
    ``slurm_partition: gpu_partition`` under ``set-resources`` for each of ``gpu_rules``, beside their own resources.
    Every other key is ``base``'s. Raises :class:`ProfileError` where a placeholder is left."""
    for name, value in (("partition", partition), ("account", account), ("gpu partition", gpu_partition)):
        if value is not None and (not value.strip() or PLACEHOLDER.search(value)):
            raise ProfileError(f"the {name} {value!r} is not a site's value: give its name (sinfo lists partitions)")
    profile = copy.deepcopy(dict(base))
    defaults = dict(profile.get("default-resources") or {})
    defaults["slurm_partition"] = partition
    if account is None:
        defaults.pop("slurm_account", None)
        profile["slurm-no-account"] = True
    else:
        defaults["slurm_account"] = account
    profile["default-resources"] = defaults
    if gpu_partition is not None:
        per_rule = dict(profile.get("set-resources") or {})
        for rule in gpu_rules:
            per_rule[rule] = {**(per_rule.get(rule) or {}), "slurm_partition": gpu_partition}
        profile["set-resources"] = per_rule
    left = placeholders(profile)
    if left:
        raise ProfileError(f"the site profile still holds placeholders: {left}")
    return profile


def executor(argv: Sequence[str], environ: Mapping[str, str], checkout: str | os.PathLike = ".") -> str:
    """The executor of a Snakemake command line: ``--executor``/``-e``, else the last named profile's ``executor:``,
    else ``local`` (where the jobs run on the host that plans them)."""
    for i, word in enumerate(argv):
        if word in ("--executor", "-e") and i + 1 < len(argv):
            return argv[i + 1]
        if word.startswith("--executor="):
            return word.split("=", 1)[1]
    bases = [b for b in (environ.get("PWD"), os.getcwd(), checkout) if b]
    found = "local"
    for profile in named_profiles(argv, environ):
        path = profile_file(profile, bases)
        if path is not None:
            found = (yaml.safe_load(path.read_text()) or {}).get("executor", found)
    return found


def unknown_targets(targets: Sequence[str], rules: Sequence[str], shown: Sequence[str]) -> str | None:
    """Why a command line's targets cannot run, before any job: a target that names no rule of ``rules`` and no file
    (a file target is a path, with a ``/`` or a suffix), listing the target rules ``shown``; None when every target
    is one of those."""
    unknown = [t for t in targets if t not in rules and "/" not in t and "." not in t]
    if not unknown:
        return None
    return (
        f"no target {', '.join(map(repr, unknown))}: give a target rule ({', '.join(shown)}; README.md, Targets, "
        "says what each makes) or an output file's path"
    )
