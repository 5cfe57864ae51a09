"""Where the documents and the outputs they are filled from are kept, and ``--copy``: bringing a run's outputs there.

docs/offline/ keeps the files of a run of each target of :data:`COPIED` with the default config (the offline suite,
the offline dynamics study, the supervision study: its tables, figure and the SHA-256 of every checkpoint) and one table of that run's snakemake benchmarks; docs/ftt_ablation/ keeps the recipe
ablation's tables. The documents read only these, config.yaml and the libraries, never results/.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pandas as pd
import yaml

from rollout_equality.config import paths

REPO = Path(__file__).resolve().parents[2]
"""The checkout whose documents these are (this module generates a checkout's documents: it is no part of what the
library needs when installed)."""
CONFIG = REPO / "config.yaml"
"""The checkout's config.yaml."""
DOCS = REPO / "docs"
OFFLINE = DOCS / "offline"
DYNAMICS = OFFLINE / "dynamics"
ABLATION = DOCS / "ftt_ablation"
LOCK = REPO / "requirements/lock.txt"
"""The locked environment (:mod:`rollout_equality.runtime.lock`) the kept outputs were made in."""
PAPER_SUITE = "paper"  # the suite docs/reproducing-the-paper.md describes
KEPT_SUITE = "offline"  # the suite (and the dynamics study's ALBERT run) whose outputs docs/offline/ keeps

COPIED = {  # target -> {path under docs/offline/: the file of a run of that target (rollout_equality.config.paths)}
    "offline": {
        **{f"{name}.png": paths.SUITE_FIGURES[f"{name}_png"] for name in ("depth", "slack", "rollout")},
        "baseline_rate.png": paths.BASELINE_FIGURE.format(ext="png"),
        "heatmap.png": paths.SUITE_FIGURES["heatmap_png"],
        "random_baseline.csv": paths.BASELINE_CSV,
        **{f"{name}.csv": paths.SUITE_TABLES[key] for key, name in paths.TABLE_NAMES.items()},  # every suite table
        "inputs.csv": paths.SUITE_TABLES["inputs"],  # not kept yet: the next --copy brings it
        "ftt_scores.csv": paths.FTT_SCORES,
        **{f"{name}.csv": paths.HEAD_TABLES[key] for key, name in paths.HEAD_TABLE_NAMES.items()},
        "heads.png": paths.HEAD_TABLES["heads_png"],
    },
    "dynamics_offline": {
        "dynamics/simulations.csv": paths.SIMULATION_REPORT["summary"],
        **{f"dynamics/{name}.csv": paths.SIMULATIONS[name] for name in ("stability", "basin", "beta_sweep")},
        "dynamics/albert_steps.csv": paths.ALBERT_REPORT["steps"],
        "dynamics/albert.json": paths.ALBERT_INFO,
    },
    "supervision_offline": {
        **{
            f"supervision/{Path(path).name}": path
            for key, path in paths.SUPERVISION_REPORT.items()
            if path.endswith(".csv") or key == "png"
        },
    },
}
BENCHMARKS = {  # target -> {its rules' benchmark files under results/benchmarks/, as the rules name them: whose runs}
    "offline": {
        "random_baseline.tsv": "one",
        "measure/{model}/{dataset}.tsv": "experiments",
        "train_ftt/{tabular}/seed{seed}.tsv": "tables",
    },
    "dynamics_offline": {"simulate_dynamics.tsv": "one", "unroll_albert/{model}/{dataset}.tsv": "albert"},
    "supervision_offline": {
        "init_supervision/seed{seed}.tsv": "supervision_seeds",
        "train_supervision/{objective}/seed{seed}.tsv": "supervision_trained",
        "measure/{model}/{dataset}.tsv": "supervision_experiments",
    },
}
SHARED = 1.5
"""A step whose wall time exceeds its CPU time by this factor (and by :data:`SHARED_MIN_S` at least) waited for cores."""
SHARED_MIN_S = 5.0
BENCHMARK_CSV = {
    "offline": "benchmarks.csv",
    "dynamics_offline": "dynamics/benchmarks.csv",
    "supervision_offline": "supervision/benchmarks.csv",
}  # under docs/offline/
TIMES = OFFLINE / "times"
"""The reports of ``benchmarks/suite_time.py --out`` (end to end from a fresh clone, each run and the median) whose
times README.md and docs/targets.md state: one file per measured run kind, named as :data:`TIME_REPORTS` says."""
TIME_REPORTS = {"offline": "offline.txt", "tiny": "tiny.txt", "supervision_offline": "supervision_offline.txt"}
ENVIRONMENT = "environment.json"  # under docs/offline/: the machine and the lock of the last --copy
ENVIRONMENTS = {"supervision_offline": "supervision/environment.json"}
"""Targets whose kept outputs record their own machine (under docs/offline/), apart from :data:`ENVIRONMENT`: a study
kept on another machine than the offline suite must not relabel the suite's outputs."""


def read_config() -> dict:
    """config.yaml as written (no defaults filled in)."""
    return yaml.safe_load(CONFIG.read_text())


def load_config() -> dict:
    """config.yaml as a run sees it: validated against the schema, every default filled in, references checked."""
    from rollout_equality.config.load import load_config as load

    return load([str(CONFIG)])


def _wildcards(config: dict, runs: str) -> list[dict]:
    """The wildcards of each run of the kept suite of kind ``runs`` (:data:`BENCHMARKS`): its experiments, its
    tables and their seeds, its ALBERT run, or the one run of a rule without wildcards."""
    if runs == "experiments":
        return [{"model": e["model"], "dataset": e["dataset"]} for e in config["suites"][KEPT_SUITE]]
    if runs == "tables":
        tabular = config["tabular"]
        return [
            {"tabular": t, "seed": seed}
            for t in tabular["suites"].get(KEPT_SUITE, [])
            for seed in tabular["datasets"][t].get("seeds", tabular["seeds"])
        ]
    if runs.startswith("supervision_"):
        from rollout_equality.config.load import validated
        from rollout_equality.config.supervision import model_name
        from rollout_equality.config.supervision import runs as study_runs

        section = validated(config)["supervision"]
        every = [{"objective": o, "seed": s} for o, s in study_runs(section)]
        if runs == "supervision_seeds":
            return [{"seed": s} for s in section["seeds"]]
        if runs == "supervision_trained":
            return [r for r in every if r["objective"] != "init"]
        return [{"model": model_name(**r), "dataset": section["test_data"]} for r in every]
    if runs == "albert":
        albert = config["dynamics"]["albert"]["suites"][KEPT_SUITE]
        return [{"model": albert["model"], "dataset": albert["dataset"]}]
    return [{}]


def run_files(target: str, config: dict) -> tuple[dict[str, str], list[str]]:
    """The files a run of ``target`` with ``config`` (as written) leaves, relative to its checkout: the kept ones,
    by their name under docs/offline/, and its benchmark files."""
    (albert,) = _wildcards(config, "albert")
    files = {name: path.format(suite=KEPT_SUITE, **albert) for name, path in COPIED[target].items()}
    benchmarks = [
        paths.benchmark_path(pattern.format(**wildcards))
        for pattern, runs in BENCHMARKS[target].items()
        for wildcards in _wildcards(config, runs)
    ]
    return files, benchmarks


def copy_kept(target: str, source: Path, offline: Path = OFFLINE, shared: bool = False) -> None:
    """Copy the kept outputs of ``target`` (:data:`COPIED`, :data:`BENCHMARKS`) from a checkout ``source`` that ran
    it with the default config into ``offline``; nothing is copied when one of them is missing, or when a step of the
    run waited for cores (:func:`shared_steps`: its times would not be the machine's) unless ``shared`` says the
    machine was shared: then its benchmarks are kept marked so (:func:`write_environment`), and the documents say
    that their times are a shared machine's."""
    files, benchmarks = run_files(target, read_config())
    missing = [str(source / path) for path in [*files.values(), *benchmarks] if not (source / path).is_file()]
    if missing:
        raise SystemExit(f"missing (run `snakemake --cores 2 {target}` there first): {', '.join(missing)}")
    rows = [
        {"step": str(Path(path).relative_to(paths.BENCHMARKS).with_suffix("")), **_benchmark(source / path)}
        for path in benchmarks
    ]
    waited = shared_steps(rows)
    if waited and not shared:
        raise SystemExit(
            f"{source} ran on a shared machine, its times are not kept: {'; '.join(waited)} (a step computes on its "
            "own threads, at least one core, so on a machine it had to itself its wall time is at most its CPU time). "
            f"Run `snakemake --cores 2 {target}` there again while nothing else runs, or copy with --shared to keep "
            "its times marked as a shared machine's; nothing was copied"
        )
    for name, path in files.items():
        (offline / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source / path, offline / name)
        print(f"{source / path} -> {offline / name}")
    table = offline / BENCHMARK_CSV[target]
    pd.DataFrame(rows).to_csv(table, index=False, float_format="%.2f", lineterminator="\n")
    print(f"{len(rows)} benchmarks -> {table}")
    write_environment(offline / ENVIRONMENTS.get(target, ENVIRONMENT), shared)


def shared_steps(rows: list[dict]) -> list[str]:
    """The steps of a run's benchmarks (``step``, wall ``s``, ``cpu_time``) that waited for cores: wall time above
    :data:`SHARED` times the CPU time and at least :data:`SHARED_MIN_S` seconds above it, each named with both
    times. A step computes on at least one core, so on a machine it had to itself its wall time stays at most its CPU
    time (below it on several threads); the check refuses runs made while another process held the cores."""
    return [
        f"{r['step']} took {r['s']:.1f} s on {r['cpu_time']:.1f} s of CPU"
        for r in rows
        if r["s"] > SHARED * r["cpu_time"] and r["s"] - r["cpu_time"] >= SHARED_MIN_S
    ]


def write_environment(path: Path, shared: bool = False) -> None:
    """Which machine and environment made the kept outputs: the processor, torch's CPU capability, the lock's digest
    (:func:`rollout_equality.runtime.lock.lock_digest`) and where the environment departed from it (none, for an
    environment installed as README says); ``shared_machine``: true for a run whose times are a shared machine's
    (:func:`shared_times`), absent otherwise."""
    import json

    import torch

    from rollout_equality.runtime.lock import differences, lock_digest, read_pins
    from rollout_equality.runtime.provenance import cpu_model

    record = {
        "cpu": cpu_model(),
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "lock": lock_digest(LOCK),
        "departures_from_the_lock": differences(
            read_pins(LOCK, here=True), read_pins(REPO / "requirements/offline-data.txt")
        ),
    }
    if shared:
        record["shared_machine"] = True
    path.write_text(json.dumps(record, indent=2) + "\n")
    print(f"machine and environment -> {path}")


def shared_times(target: str) -> bool:
    """Whether the kept run of ``target`` was copied from a shared machine (``--copy --shared``): its times are not
    a quiet machine's."""
    import json

    return bool(json.loads((OFFLINE / ENVIRONMENTS.get(target, ENVIRONMENT)).read_text()).get("shared_machine"))


def _benchmark(path: Path) -> dict[str, float]:
    """A snakemake benchmark file's wall time, peak memory and CPU time (the mean over its repeats)."""
    table = pd.read_csv(path, sep="\t")
    return {"s": table["s"].mean(), "max_rss": table["max_rss"].mean(), "cpu_time": table["cpu_time"].mean()}


def suite_time(kind: str) -> dict:
    """What a kept ``benchmarks/suite_time.py`` report (:data:`TIME_REPORTS`) measured: the machine, the command, the
    commit, the day it was run (None in a report from before suite_time.py wrote it), each run's end-to-end seconds
    and their median."""
    path = TIMES / TIME_REPORTS[kind]
    text = path.read_text()
    head = re.search(
        r"^(?P<cpu>.+?), (?P<cores>\d+) cores, load [\d.]+; (?P<command>.+) from a fresh clone of (?P<commit>\w+), "
        r"(?P<n>\d+) runs?(?:, (?P<date>\d{4}-\d\d-\d\d))?$",
        text,
        re.M,
    )
    median = re.search(r"^median: (\d+) s$", text, re.M)
    walls = [float(w) for w in re.findall(r"^end to end (\d+) s", text, re.M)]
    if head is None or median is None or len(walls) != int(head["n"]):
        raise SystemExit(f"{path} is not a report of benchmarks/suite_time.py --repeats N --out (run it again)")
    return {
        "cpu": head["cpu"],
        "cores": int(head["cores"]),
        "command": head["command"],
        "commit": head["commit"],
        "date": head["date"],  # None in a report written before suite_time.py dated its reports
        "runs": walls,
        "median": float(median.group(1)),
    }


def benchmark_seconds(target: str) -> float:
    """The summed wall time (s) of the benchmarked steps of ``target``'s kept run (``benchmarks.csv``)."""
    return float(pd.read_csv(OFFLINE / BENCHMARK_CSV[target])["s"].sum())


def benchmark_cpu_seconds(target: str) -> float:
    """The summed CPU time (s) of the benchmarked steps of ``target``'s kept run (``benchmarks.csv``)."""
    return float(pd.read_csv(OFFLINE / BENCHMARK_CSV[target])["cpu_time"].sum())
