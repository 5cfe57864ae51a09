"""Where every file of the workflow goes: each path template and each rule's output keys, stated once.

workflow/rules/common.smk builds the rules' inputs and outputs from these (``{model}``, ``{dataset}``,
``{tabular}``, ``{seed}``, ``{suite}`` are Snakemake wildcards, filled in with ``str.format`` for the target
lists); the library never types a path: it writes where the rule tells it, and checks the output keys it is
given against the dictionaries below (:func:`rollout_equality.runtime.files.require_paths`). Paths are relative to the
working directory of the run. tests/config/test_paths.py keeps ``resources/`` and ``results/`` out of every other
module of the library.
"""

from __future__ import annotations

from pathlib import PurePosixPath

RESOURCES = "resources"
RESULTS = "results"
PAPER = "paper"  # paper/main.tex and what it reads; \input and \includegraphics paths are relative to it

# --- local rules: downloads and prepared inputs ----------------------------------------------------------
MODELS = f"{RESOURCES}/models"
MODEL_INFO = f"{MODELS}/{{model}}/model.json"
DATA_MANIFEST = f"{RESOURCES}/data/{{dataset}}/manifest.json"
TABLE_RAW = f"{RESOURCES}/tabular/{{tabular}}/raw.parquet"
TABLE_DATA = f"{RESOURCES}/tabular/{{tabular}}/data.npz"
TABLE_MANIFEST = f"{RESOURCES}/tabular/{{tabular}}/manifest.json"
DOWNLOAD_CACHE = f"{RESOURCES}/cache"  # OpenML's and scikit-learn's caches, in their own layouts
SOURCES_CHECK = f"{RESULTS}/sources/check.tsv"  # the preflight that downloads wait for (temporary)
SOURCES_REPORT = f"{RESULTS}/sources/check-{{stamp}}.tsv"  # the same, asked for by name (one per run)

# --- every rule's log and benchmark: <LOGS>/<rule>[/<wildcards>].log, <BENCHMARKS>/<rule>[/<wildcards>].tsv -------
LOGS = f"{RESULTS}/logs"
BENCHMARKS = f"{RESULTS}/benchmarks"


def snakemake_command(target: str, *flags: str, cores: str = "1") -> str:
    """The Snakemake command that makes ``target``, as a message shows it to a reader:
    ``snakemake --cores 1 <target> [flags]``.

    The rule for every command the project shows, stated once: Snakemake executes nothing without ``--cores`` (or a
    profile that sets it; a dry run sets it itself, so only a real run finds the omission), and a flag that takes a
    list of values (``--forcerun``, ``--set-resources``, ``--default-resources``, ``--config``, ``--configfile``)
    takes a target written after it as one more value: the target comes first, the flags after it.
    """
    return " ".join(["snakemake", "--cores", cores, target, *flags])


def log_path(tail: str) -> str:
    """A rule's log file, ``tail`` (e.g. ``measure/{model}/{dataset}.log``) under :data:`LOGS`."""
    return f"{LOGS}/{tail}"


def benchmark_path(tail: str) -> str:
    """A rule's benchmark file (Snakemake's ``benchmark:``), ``tail`` under :data:`BENCHMARKS`."""
    return f"{BENCHMARKS}/{tail}"


# --- measurement ---------------------------------------------------------------------------------------
COMPANION_SUFFIXES = {
    "rollout": ".rollout.parquet",
    "heads": ".heads.parquet",
    "heads_rollout": ".heads.rollout.parquet",
}
"""What replaces ``.parquet`` in the name of a records file for each file written beside it: its rollout records,
the heads file (per head and fused: config ``analysis``) and the heads file's rollout companion."""


def companions(records: str) -> dict[str, str]:
    """The files written beside the records file (or template) ``records``, by :data:`COMPANION_SUFFIXES`' keys:
    ``r.parquet`` → ``r.rollout.parquet``, ``r.heads.parquet``, ``r.heads.rollout.parquet`` (a name without
    ``.parquet`` gets the suffix added). The workflow's templates below and the command line's ``--out`` both
    name them so."""
    stem = str(records).removesuffix(".parquet")
    return {key: stem + suffix for key, suffix in COMPANION_SUFFIXES.items()}


RECORDS = f"{RESULTS}/records/{{model}}/{{dataset}}.parquet"
ROLLOUT, HEADS, HEADS_ROLLOUT = companions(RECORDS).values()
DUMP = f"{RESULTS}/attention/{{model}}/{{dataset}}.npz"
SUMMARY = f"{RESULTS}/summaries/{{model}}/{{dataset}}.csv"

FTT_MODEL = f"{RESULTS}/ftt/{{tabular}}/seed{{seed}}/model.pt"
FTT_METRICS = f"{RESULTS}/ftt/{{tabular}}/seed{{seed}}/metrics.json"
FTT_RECORDS = f"{RESULTS}/records/ftt/{{tabular}}/seed{{seed}}.parquet"
FTT_ROLLOUT, FTT_HEADS, FTT_HEADS_ROLLOUT = companions(FTT_RECORDS).values()
FTT_SUMMARY = f"{RESULTS}/summaries/ftt/{{tabular}}/seed{{seed}}.csv"

# --- tables and figures --------------------------------------------------------------------------------
FTT_SCORES = f"{RESULTS}/tables/{{suite}}/ftt_scores.csv"
FTT_ABLATION = {  # what write_ftt_ablation writes (rollout_equality.reporting.ftt_ablation)
    "summary": f"{RESULTS}/tables/ftt_ablation/summary.csv",
    "layers": f"{RESULTS}/tables/ftt_ablation/layers.csv",
    "html": f"{RESULTS}/tables/ftt_ablation/summary.html",
    "tex": f"{PAPER}/tables/ftt_ablation.tex",
    "pdf": f"{PAPER}/figures/ftt_ablation.pdf",
    "png": f"{PAPER}/figures/ftt_ablation.png",
}
FTT_ABLATION_SECTION = f"{PAPER}/tables/{{suite}}/ftt_ablation_section.tex"

BASELINE_CSV = f"{RESULTS}/baseline/random_baseline.csv"
BASELINE_TEX = f"{PAPER}/tables/baseline.tex"
BASELINE_FIGURE = f"{PAPER}/figures/baseline_rate.{{ext}}"

TABLE_NAMES = {
    "claims": "claims",
    "rates": "model_rates",
    "depth": "depth_rates",
    "rollout": "rollout_summary",
    "special": "special_tokens",
    "ftt": "ftt",
}
"""The suite tables by key: CSV and HTML under results/tables/<suite>/, LaTeX under paper/tables/<suite>/."""
LATEX_TABLES = ("claims", "rates", "depth", "rollout", "ftt")
"""The suite tables that the paper also shows, as LaTeX."""
SUITE_TABLES_DIR = f"{RESULTS}/tables/{{suite}}"
"""A suite's tables folder (what ``rollout-equality compare`` reads)."""
SUITE_TABLES = {  # what write_suite_tables writes (rollout_equality.reporting.suite_tables)
    **{key: f"{RESULTS}/tables/{{suite}}/{name}.csv" for key, name in TABLE_NAMES.items()},
    **{f"html_{key}": f"{RESULTS}/tables/{{suite}}/{name}.html" for key, name in TABLE_NAMES.items()},
    **{f"tex_{key}": f"{PAPER}/tables/{{suite}}/{TABLE_NAMES[key]}.tex" for key in LATEX_TABLES},
    "tex_macros": f"{PAPER}/tables/{{suite}}/macros.tex",
    "inputs": f"{RESULTS}/tables/{{suite}}/inputs.csv",  # each data set's manifest digest (compare: other inputs)
}
FIGURE_NAMES = ("depth", "slack", "rollout", "heatmap")
SUITE_FIGURES = {  # what write_suite_figures draws (rollout_equality.reporting.figures)
    f"{name}_{ext}": f"{PAPER}/figures/{{suite}}/{name}.{ext}" for name in FIGURE_NAMES for ext in ("pdf", "png")
}
HEAD_TABLE_NAMES = {"heads": "head_rates", "agreement": "head_agreement", "fusions": "fusion_rates"}
"""The per-head and fusion tables by key (rollout_equality.reporting.head_tables): CSV and HTML under results/tables/<suite>/,
written for a suite whose config ``analysis`` measures beyond the head-averaged records."""
HEAD_TABLES = {  # what write_head_tables writes
    **{key: f"{RESULTS}/tables/{{suite}}/{name}.csv" for key, name in HEAD_TABLE_NAMES.items()},
    **{f"html_{key}": f"{RESULTS}/tables/{{suite}}/{name}.html" for key, name in HEAD_TABLE_NAMES.items()},
    **{f"heads_{ext}": f"{PAPER}/figures/{{suite}}/heads.{ext}" for ext in ("pdf", "png")},
}
PAPER_MAIN = f"{PAPER}/main.tex"
PAPER_PDF = f"{PAPER}/suite-{{suite}}.pdf"  # built beside main.tex from a driver suite-<suite>.tex

# --- the dynamics study --------------------------------------------------------------------------------
SIMULATIONS = {  # what simulate_dynamics writes (rollout_equality.studies.dynamics.report)
    name: f"{RESULTS}/dynamics/simulations/{name}.{ext}"
    for name, ext in (
        ("trajectory", "csv"),
        ("stability", "csv"),
        ("basin", "csv"),
        ("beta_sweep", "csv"),
        ("info", "json"),
        ("tokens", "npz"),
    )
}
SIMULATION_REPORT = {  # what report_simulations writes beside the figures
    "summary": f"{RESULTS}/tables/dynamics/simulations.csv",
    "summary_html": f"{RESULTS}/tables/dynamics/simulations.html",
    "stability": f"{PAPER}/tables/dynamics/stability.tex",
    "basin": f"{PAPER}/tables/dynamics/basin.tex",
    "sweep": f"{PAPER}/tables/dynamics/beta_sweep.tex",
}
SIMULATION_FIGURE = f"{PAPER}/figures/dynamics/{{name}}.{{ext}}"
SIMULATION_FIGURE_NAMES = ("consensus", "bipartite", "multihead", "asymmetric", "basin")
SIMULATION_FIGURES = {
    f"{name}_{ext}": SIMULATION_FIGURE.format(name=name, ext=ext)
    for name in SIMULATION_FIGURE_NAMES
    for ext in ("pdf", "png")
}
ALBERT_RECORDS = f"{RESULTS}/dynamics/albert/{{model}}/{{dataset}}.parquet"
ALBERT_INFO = f"{RESULTS}/dynamics/albert/{{model}}/{{dataset}}.json"
ALBERT_REPORT = {  # what report_albert writes
    "steps": f"{RESULTS}/tables/dynamics/{{suite}}/albert_steps.csv",
    "steps_html": f"{RESULTS}/tables/dynamics/{{suite}}/albert_steps.html",
    "tex": f"{PAPER}/tables/dynamics/{{suite}}/albert.tex",
    "pdf": f"{PAPER}/figures/dynamics/{{suite}}/albert.pdf",
    "png": f"{PAPER}/figures/dynamics/{{suite}}/albert.png",
}


def in_paper(path: str) -> str:
    """``path`` (under paper/) as main.tex's ``\\input`` / ``\\includegraphics`` name it: relative, no suffix."""
    return str(PurePosixPath(path).relative_to(PAPER).with_suffix(""))


# --- the supervision study -----------------------------------------------------------------------------
SUPERVISION_CHECKPOINT = f"{RESULTS}/supervision/checkpoints/{{objective}}/seed{{seed}}"
"""A checkpoint folder of the supervision study: ``objective`` is ``init`` (the seed's untrained initialisation, the
control) or a training objective."""
SUPERVISION_FILES = {
    key: f"{SUPERVISION_CHECKPOINT}/{name}"
    for key, name in (("config", "config.json"), ("weights", "model.safetensors"), ("info", "training.json"))
}
"""What a checkpoint folder holds (rollout_equality.studies.supervision.train)."""
SUPERVISION_REPORT = {  # what report_supervision writes (rollout_equality.studies.supervision.report)
    **{
        name: f"{RESULTS}/tables/supervision/{name}.csv"
        for name in (
            "model_rates",
            "depth_rates",
            "supervision_depth",
            "supervision_seeds",
            "supervision_late",
            "supervision_contrast",
            "supervision_scores",
        )
    },
    "heads": f"{RESULTS}/tables/supervision/supervision_heads.csv",
    "checkpoints": f"{RESULTS}/tables/supervision/supervision_checkpoints.csv",
    "html": f"{RESULTS}/tables/supervision/supervision.html",
    "sentences": f"{RESULTS}/tables/supervision/sentences.md",
    "pdf": f"{PAPER}/figures/supervision/depth.pdf",
    "png": f"{PAPER}/figures/supervision/depth.png",
}
