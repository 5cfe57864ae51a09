"""What each target costs on a reader's machine: the values of docs/targets.in.md and docs/costs.in.md.

Every number is computed here from kept files: the kept runs' benchmarks (:data:`tools.documents.kept.BENCHMARK_CSV`:
each step's wall time, CPU time and peak memory), their end-to-end times (``docs/offline/times/``), the FT-Transformer
scores (epochs, training rows), config.yaml, the size of the prepared environment (``benchmarks/environment_size.json``)
and the parameter counts of the paper's architectures (built on torch's meta device: no weights). The few numbers
measured where no file keeps them are :data:`MEASURED`, each with its source.

**Wall time, estimated.** A job's thread count is fixed by the config (``extraction.threads``,
``tabular.training.threads``: :mod:`rollout_equality.runtime.threads`), so more cores run more jobs at once, not one job
faster. A job is taken to last on any machine what it lasted on the 2-core reference machine. On ``c`` cores a
target then takes its unbenchmarked part (preparing, tables, figures, Snakemake itself: the kept end-to-end time less
what its steps explain, held serial) plus ``max(W / c, L)``: ``W`` the jobs' core-seconds (wall time × threads), ``L``
the longest job. On one GPU (:data:`GPU_HOST_CORES` host cores) the jobs that claim the GPU run one after another;
each lasts between its time scaled by the GPU's measured speed-up and that plus a fixed part no GPU shortens (at most
the shortest kept job of its rule, which did all of its work in that time).
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import pandas as pd

from tools.documents import kept, wording
from tools.documents.kept import BENCHMARK_CSV, OFFLINE, REPO, load_config, suite_time

CORES = (2, 16, 64)
"""The core counts docs/targets.md estimates wall times for."""
GPU_HOST_CORES = 16
"""The CPU cores beside the one GPU of the GPU column (the GPU machines this project was lent have 16)."""
ENVIRONMENT_SIZE = REPO / "benchmarks/environment_size.json"
"""``benchmarks/environment_size.py --out``: the prepared environment's disk, measured."""

MEASURED = {
    # Measured once where no kept file holds the number; each typed here only.
    "paper_measuring_h": (0.45, 0.54),  # the paper suite's measure jobs, hours on the reference machine's 2 cores:
    # benchmarks/extraction_overhead.py (benchmarks/README.md), and the same estimate before the analysis's screen
    # (CHANGELOG.md)
    "gpu_paper_measuring_min": 1.6,  # the same on one NVIDIA H200, benchmarks/gpu_check.py, 2026-12-04 (docs/gpu.md)
    "gpu_epoch_s": 1.69,  # one FT-Transformer epoch on UCI Adult on that H200 (docs/gpu.md)
    "imagenet_val_jpeg_bytes": 6_744_924_160 / 50_000,  # ILSVRC2012_img_val.tar over its 50,000 photographs
}
PAPER_TABLES = {"adult": (48_842, 14), "california": (20_640, 8)}
"""The paper suite's tables, as config.yaml's comments state them: rows, features (OpenML 1590; scikit-learn's
California Housing)."""
IMAGENETTE_VALIDATION = 3_925
"""Photographs in Imagenette's validation split (config.yaml's comment), of which the paper suite draws its inputs."""
WIKITEXT_TEST_MB = 0.7
"""WikiText-103's test split file, as config.yaml's comment states it."""
CSV_FIELD_BYTES = 8
"""A table's field as a downloaded text file, in bytes (estimated: a number or a category of up to 7 characters)."""
RULE_THREADS = {"random_baseline": 8, "simulate_dynamics": 1}
"""Threads of the rules whose count is not a config setting (workflow/rules/baseline.smk, dynamics.smk)."""
GPU_RULES = ("measure", "train_ftt")
"""The benchmarked rules that claim the GPU under overlays/gpu.yaml (measure_ftt does too; it is not benchmarked)."""


@dataclass(frozen=True)
class Job:
    rule: str
    low: float  # its wall time on the reference machine, seconds (a range where it is estimated)
    high: float
    threads: int
    gpu: tuple[float, float] | None = None  # its wall time on one GPU, seconds; None: it runs on the CPU


def threads(rule: str, config: dict, table: str | None = None) -> int:
    """The threads the workflow gives a job of ``rule`` (the rule's own count, or the config setting it reads)."""
    if rule in RULE_THREADS:
        return RULE_THREADS[rule]
    if rule in ("measure", "unroll_albert"):
        return config["extraction"]["threads"]
    if rule in ("init_supervision", "train_supervision"):
        return config["supervision"]["threads"]
    if rule == "train_ftt":
        return (
            config["tabular"]["datasets"].get(table, {}).get("training", {}).get("threads")
            or config["tabular"]["training"]["threads"]
        )
    raise ValueError(f"no thread count for rule {rule}")


def kept_steps(target: str) -> pd.DataFrame:
    """The benchmarked steps of ``target``'s kept run, with their rule."""
    steps = pd.read_csv(OFFLINE / BENCHMARK_CSV[target])
    return steps.assign(rule=steps["step"].str.split("/").str[0])


def epoch_seconds() -> tuple[float, float, int]:
    """(wall, CPU) seconds of one FT-Transformer epoch on the reference machine, and the training rows they were
    measured on: the kept UCI Adult run, the largest table the offline suite trains."""
    scores = pd.read_csv(OFFLINE / "ftt_scores.csv")
    steps = kept_steps("offline").set_index("step")
    row = scores.sort_values("n_train").iloc[-1]
    step = steps.loc[f"train_ftt/{row['dataset']}/seed{row['seed']}"]
    return step["s"] / row["epochs"], step["cpu_time"] / row["epochs"], int(row["n_train"])


def gpu_factors() -> dict[str, tuple[float, float]]:
    """Per GPU rule: the GPU's measured time as a share of the reference machine's (its range), and the largest part
    of a job no GPU shortens (the shortest kept job of that rule)."""
    low_h, high_h = MEASURED["paper_measuring_h"]
    gpu_s = 60 * MEASURED["gpu_paper_measuring_min"]
    steps = kept_steps("offline")
    wall_epoch, _, _ = epoch_seconds()
    return {
        "measure": (gpu_s / (3600 * high_h), gpu_s / (3600 * low_h), steps.loc[steps["rule"] == "measure", "s"].min()),
        "train_ftt": (
            MEASURED["gpu_epoch_s"] / wall_epoch,
            MEASURED["gpu_epoch_s"] / wall_epoch,
            steps.loc[steps["rule"] == "train_ftt", "s"].min(),
        ),
    }


def on_gpu(rule: str, low: float, high: float) -> tuple[float, float] | None:
    """A job's wall time on one GPU, from its reference time (None for a rule that runs on the CPU)."""
    if rule not in GPU_RULES:
        return None
    f_low, f_high, fixed = gpu_factors()[rule]
    return f_low * low, min(high, fixed + f_high * high)


def kept_jobs(target: str, config: dict) -> list[Job]:
    """The jobs of ``target``'s kept run, as they ran."""
    out = []
    for step in kept_steps(target).itertuples():
        table = step.step.split("/")[1] if step.rule == "train_ftt" else None
        out.append(Job(step.rule, step.s, step.s, threads(step.rule, config, table), on_gpu(step.rule, step.s, step.s)))
    return out


def unexplained(target: str, config: dict) -> float:
    """The seconds of ``target``'s kept end-to-end time that its benchmarked steps do not explain (0 where no
    end-to-end time is kept): preparing, tables, figures, Snakemake itself."""
    if target not in kept.TIME_REPORTS:
        return 0.0
    measured = suite_time(target)
    low, _ = cpu_wall(kept_jobs(target, config), measured["cores"])
    return max(0.0, measured["median"] - low)


def cpu_wall(jobs: list[Job], cores: int, overhead: float = 0.0) -> tuple[float, float]:
    """The estimated wall time (low, high) of ``jobs`` on ``cores`` cores (the module's docstring says how)."""
    if not jobs:
        return overhead, overhead
    out = []
    for wall in (lambda j: j.low, lambda j: j.high):
        work = sum(wall(j) * min(j.threads, cores) for j in jobs)
        out.append(overhead + max(work / cores, max(wall(j) for j in jobs)))
    return out[0], out[1]


def gpu_wall(jobs: list[Job], overhead: float = 0.0) -> tuple[float, float]:
    """The estimated wall time (low, high) of ``jobs`` on one GPU and :data:`GPU_HOST_CORES` cores: the GPU's jobs one
    after another, beside the others on the cores."""
    on, off = [j for j in jobs if j.gpu], [j for j in jobs if not j.gpu]
    cpu = cpu_wall(off, GPU_HOST_CORES)
    return tuple(overhead + max(sum(j.gpu[i] for j in on), cpu[i]) for i in (0, 1))


def paper_table_rows(config: dict, table: str) -> float:
    """The training rows of a paper suite table: its rows less the config's test and validation shares."""
    rows, _ = PAPER_TABLES[table]
    split = config["tabular"]["datasets"][table].get("split", config["tabular"]["split"])
    return rows * (1 - split["test"]) * (1 - split["val"])


def epochs(training: dict) -> tuple[int, int]:
    """The fewest and the most epochs early stopping trains: patience + 1, and ``max_epochs``."""
    return min(training["patience"] + 1, training["max_epochs"]), training["max_epochs"]


def training_jobs(config: dict, table: str, seeds: list, training: dict, scale: float) -> list[Job]:
    """One ``train_ftt`` job per seed: each epoch as the kept run's, times ``scale`` (rows and tokens against it)."""
    wall_epoch, _, _ = epoch_seconds()
    few, most = epochs(training)
    gpu_epoch = MEASURED["gpu_epoch_s"] * scale
    fixed = gpu_factors()["train_ftt"][2]
    return [
        Job(
            "train_ftt",
            few * wall_epoch * scale,
            most * wall_epoch * scale,
            threads("train_ftt", config, table),
            (few * gpu_epoch, fixed + most * gpu_epoch),
        )
        for _ in seeds
    ]


def table_scale(config: dict, table: str) -> float:
    """A paper table's training cost per epoch against the kept UCI Adult run's: its training rows, and its tokens
    (the features and CLS), in proportion."""
    _, _, kept_rows = epoch_seconds()
    _, features = PAPER_TABLES[table]
    _, kept_features = PAPER_TABLES["adult"]  # UCI Adult has the paper's Adult's 14 features
    return paper_table_rows(config, table) / kept_rows * (features + 1) / (kept_features + 1)


def measure_weights(config: dict) -> dict[str, float]:
    """Each paper model's share of the paper suite's measuring: the kept run's seconds per input of its untrained
    control (``<model>_random``), times its inputs."""
    steps = kept_steps("offline").set_index("step")
    offline = {e["model"]: e for e in config["suites"]["offline"]}
    weights = {}
    for experiment in config["suites"]["paper"]:
        control = offline[f"{experiment['model']}_random"]
        inputs = control.get("inputs", config["datasets"][control["dataset"]]["n"])
        per_input = steps.loc[f"measure/{control['model']}/{control['dataset']}", "s"] / inputs
        weights[experiment["model"]] = per_input * experiment.get(
            "inputs", config["datasets"][experiment["dataset"]]["n"]
        )
    total = sum(weights.values())
    return {model: w / total for model, w in weights.items()}


def paper_jobs(config: dict) -> list[Job]:
    """The jobs of ``all``: the random baseline as kept, each paper model's measure job (its share of
    :data:`MEASURED`'s paper measuring), and FT-Transformer's trainings (from the kept epoch's time)."""
    baseline = [j for j in kept_jobs("offline", config) if j.rule == "random_baseline"]
    low_h, high_h = MEASURED["paper_measuring_h"]
    _, f_high, fixed = gpu_factors()["measure"]
    gpu_total = 60 * MEASURED["gpu_paper_measuring_min"]
    measuring = [
        Job(
            "measure",
            share * low_h * 3600,
            share * high_h * 3600,
            threads("measure", config),
            (share * gpu_total, fixed + share * gpu_total),
        )
        for share in measure_weights(config).values()
    ]
    training = [
        job
        for table in config["tabular"]["suites"]["paper"]
        for job in training_jobs(
            config,
            table,
            config["tabular"]["datasets"][table].get("seeds", config["tabular"]["seeds"]),
            config["tabular"]["training"] | config["tabular"]["datasets"][table].get("training", {}),
            table_scale(config, table),
        )
    ]
    return baseline + measuring + training


def ablation_jobs(config: dict) -> list[Job]:
    """The recipe ablation's trainings: every setting and seed on its table, at the kept run's epoch time."""
    from rollout_equality.config.checks import resolved_tables

    ablation = config["tabular"]["ablation"]
    jobs = []
    for name, table in resolved_tables(config).items():
        if name.startswith(f"{ablation['table']}@"):
            jobs += training_jobs(config, ablation["table"], ablation["seeds"], table["training"], 1.0)
    return jobs


def duration(seconds: float) -> str:
    """A duration as a table reads it: ``45 s``, ``12 min``, ``2.5 h``, ``19 h``."""
    if seconds < 100:
        return f"{seconds:.0f} s"
    if seconds < 100 * 60:
        return f"{seconds / 60:.0f} min"
    hours = seconds / 3600
    return f"{hours:.1f} h" if hours < 10 else f"{hours:.0f} h"


def duration_range(low: float, high: float) -> str:
    a, b = duration(low), duration(high)
    if a == b:
        return a
    if a.split()[1] == b.split()[1]:
        return f"{a.split()[0]}–{b}"
    return f"{a}–{b}"


def estimates(config: dict) -> list[tuple[str, str, list[str]]]:
    """(target, what is counted, the wall times: one per core count of :data:`CORES`, then one GPU)."""
    offline_rest = unexplained("offline", config)
    rows = []

    def row(target: str, counted: str, jobs: list[Job], rest: float) -> None:
        cells = [duration_range(*cpu_wall(jobs, c, rest)) for c in CORES]
        rows.append((target, counted, cells + [duration_range(*gpu_wall(jobs, rest))]))

    for target in ("offline", "supervision_offline"):
        rest = unexplained(target, config)
        row(
            f"`{target}`",
            f"end to end: its steps and {duration(rest)} of the rest, as kept",
            kept_jobs(target, config),
            rest,
        )
    row("`dynamics_offline`", "its two benchmarked steps", kept_jobs("dynamics_offline", config), 0.0)
    row(
        "`dynamics`",
        "as `dynamics_offline` (the same architecture and inputs, trained weights)",
        kept_jobs("dynamics_offline", config),
        0.0,
    )
    paper = paper_jobs(config)
    few, most = epochs(config["tabular"]["training"])
    row(
        "`all`, `paper`",
        f"end to end, with the rest of `offline`; training {few} to {most} epochs",
        paper,
        offline_rest,
    )
    ablation = ablation_jobs(config)
    row("`ftt_ablation`", "its trainings (measuring them takes seconds)", ablation, 0.0)
    row("`all` with `overlays/ftt_ablation.yaml`", "`all` and `ftt_ablation`", paper + ablation, offline_rest)
    return rows


def estimates_table(config: dict) -> str:
    header = ["target", "what is counted", *(f"{c} cores" for c in CORES), f"one GPU, {GPU_HOST_CORES} cores"]
    return "\n".join(wording.markdown_table(header, [(t, c, *cells) for t, c, cells in estimates(config)]))


def memory_table() -> str:
    """Each benchmarked rule's peak resident memory in the kept runs, and the step that reached it."""
    steps = pd.concat([kept_steps(target) for target in BENCHMARK_CSV], ignore_index=True)
    rows = []
    for rule, group in steps.groupby("rule", sort=False):
        peak = group.loc[group["max_rss"].idxmax()]
        rows.append((f"`{rule}`", f"{peak['max_rss'] / 1024:.1f} GiB", f"`{peak['step']}`", len(group)))
    return "\n".join(wording.markdown_table(["rule", "peak memory", "its step", "steps kept"], rows))


def parameters(config: dict, model: str) -> int:
    """The parameter count of a model of config.yaml, built with random weights on torch's meta device (its untrained
    control's architecture for a hub model: ``<model>_random``, the published size)."""
    import timm
    import torch
    import transformers

    spec = config["models"].get(f"{model}_random", config["models"][model])["random_init"]
    with torch.device("meta"):
        if "timm_name" in spec:
            network = timm.create_model(spec["timm_name"], pretrained=False)
        else:
            settings = dict(spec["config"])
            model_type = settings.pop("model_type")
            network = transformers.AutoModel.from_config(transformers.AutoConfig.for_model(model_type, **settings))
    return sum(p.numel() for p in network.parameters())


def gib(n: float) -> str:
    return f"{n / 2**30:.1f} GiB" if n >= 2**30 else f"{n / 2**20:.0f} MiB"


def downloads_table(config: dict) -> tuple[str, float]:
    """The paper suite's and the dynamics study's downloads, estimated: a model's float32 weights (4 bytes a
    parameter), a data set's files; and their total in bytes."""
    rows, total = [], 0.0
    models = [e["model"] for e in config["suites"]["paper"]] + [
        config["dynamics"]["albert"]["suites"]["paper"]["model"]
    ]
    for model in models:
        n = parameters(config, model)
        total += 4 * n
        rows.append((f"`{model}`", f"{n / 1e6:.0f} M parameters × 4 bytes", gib(4 * n)))
    photos = IMAGENETTE_VALIDATION * MEASURED["imagenet_val_jpeg_bytes"]
    rows.append(
        (
            "`imagenet_val`",
            f"{IMAGENETTE_VALIDATION / 1000:.1f} thousand photographs × ImageNet's mean JPEG size",
            gib(photos),
        )
    )
    rows.append(("`wikitext`", "its test split's file", gib(WIKITEXT_TEST_MB * 2**20)))
    total += photos + WIKITEXT_TEST_MB * 2**20
    for table, (n_rows, features) in PAPER_TABLES.items():
        size = n_rows * (features + 1) * CSV_FIELD_BYTES
        total += size
        rows.append(
            (
                f"`{table}`",
                f"{n_rows / 1000:.1f} thousand rows × {features + 1} fields × {CSV_FIELD_BYTES} bytes",
                gib(size),
            )
        )
    return "\n".join(wording.markdown_table(["source", "estimated from", "size"], rows)), total


def environment_table() -> str:
    measured = json.loads(ENVIRONMENT_SIZE.read_text())
    sizes = measured["bytes"]
    parts = {
        "total": "the whole `.venv`",
        "cuda_libraries": "of which the CUDA libraries and triton (Linux only)",
        "torch": "of which torch",
        "data_wheels": "of which the data wheels",
    }
    rows = [(what, gib(sizes[key])) for key, what in parts.items()]
    return "\n".join(wording.markdown_table(["part", "size"], rows))


def environment_total() -> str:
    """The prepared environment's size, as measured (:data:`ENVIRONMENT_SIZE`)."""
    return gib(json.loads(ENVIRONMENT_SIZE.read_text())["bytes"]["total"])


def environment_measured() -> str:
    measured = json.loads(ENVIRONMENT_SIZE.read_text())
    return f"CPython {measured['python']} on {measured['platform']}, {measured['date']}"


def targets_values() -> dict[str, str]:
    """Every ``{name}`` of docs/targets.in.md (README's kept times among them)."""
    from tools.documents.results import readme_values

    config = load_config()
    downloads, total = downloads_table(config)
    return readme_values() | {
        "estimates_table": estimates_table(config),
        "memory_table": memory_table(),
        "downloads_table": downloads,
        "downloads_total": gib(total),
        "environment_table": environment_table(),
        "environment_measured": environment_measured(),
        "environment_total": environment_total(),
        "gpu_host_cores": str(GPU_HOST_CORES),
        "extraction_threads": str(config["extraction"]["threads"]),
        "training_threads": str(config["tabular"]["training"]["threads"]),
    }


def costs_values() -> dict[str, str]:
    """Every ``{name}`` of docs/costs.in.md: core-hours per step kind, from the same sources as the wall times."""
    config = load_config()
    wall_epoch, cpu_epoch, kept_rows = epoch_seconds()
    baseline = kept_steps("offline").set_index("rule").loc["random_baseline"]
    dynamics = kept_steps("dynamics_offline").set_index("rule")
    low_h, high_h = MEASURED["paper_measuring_h"]
    cores = suite_time("offline")["cores"]

    def core_hours(seconds: float) -> float:
        return seconds / 3600

    few, most = epochs(config["tabular"]["training"])
    training = {}
    for table in config["tabular"]["suites"]["paper"]:
        seeds = len(config["tabular"]["datasets"][table].get("seeds", config["tabular"]["seeds"]))
        scale = table_scale(config, table)
        training[table] = (core_hours(seeds * few * cpu_epoch * scale), core_hours(seeds * most * cpu_epoch * scale))
    measuring = (cores * low_h, cores * high_h)
    base = core_hours(cores * baseline["s"])
    train_low, train_high = sum(t[0] for t in training.values()), sum(t[1] for t in training.values())
    ablation = ablation_jobs(config)
    ablation_ch = (
        core_hours(sum(j.low / wall_epoch * cpu_epoch for j in ablation)),
        core_hours(sum(j.high / wall_epoch * cpu_epoch for j in ablation)),
    )
    all_ch = (base + measuring[0] + train_low, base + measuring[1] + train_high)

    def ch(x: float) -> str:
        return wording.sig(math.ceil(x * 10) / 10 if x < 10 else math.ceil(x))

    def ch_range(low: float, high: float) -> str:
        return f"{ch(low)}–{ch(high)}"

    return {
        "reference_cores": str(cores),
        "cost_all": ch_range(*all_ch),
        "cost_baseline": ch(base),
        "cost_measuring": ch_range(*measuring),
        "cost_training": ch_range(train_low, train_high),
        "cost_ablation": ch_range(*ablation_ch),
        "cost_all_ablation": ch_range(all_ch[0] + ablation_ch[0], all_ch[1] + ablation_ch[1]),
        "cost_dynamics": ch(core_hours(cores * dynamics["s"].sum())),
        "measuring_hours": f"{low_h}–{high_h} h",
        "baseline_s": f"{baseline['s']:.0f} s",
        "epoch_cpu_s": f"{cpu_epoch:.0f}",
        "kept_train_rows": f"{kept_rows:,}",
        "fewest_epochs": str(few),
        "most_epochs": str(most),
        "training_by_table": wording.and_([f"{table} {ch_range(*training[table])}" for table in training]),
        "table_scales": wording.and_([f"{table} {table_scale(config, table):.2f}×" for table in training]),
        "simulate_s": f"{dynamics.loc['simulate_dynamics', 's']:.0f} s",
        "ablation_settings": str(len(config["tabular"]["ablation"]["settings"])),
        "ablation_seeds": str(len(config["tabular"]["ablation"]["seeds"])),
        "unroll_s": f"{dynamics.loc['unroll_albert', 's']:.0f} s",
    }
