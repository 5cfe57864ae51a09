import os
import re
import sys
import time
from pathlib import Path

import yaml
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import min_version

sys.path.insert(0, str(Path(workflow.main_snakefile).parent / "src"))  # this checkout's library first
from rollout_equality.config.profiles import check_profiles, executor, unknown_targets

# a profile that still holds a <placeholder> stops here, before any job is planned
check_profiles(sys.argv, os.environ, Path(workflow.main_snakefile).parent)

from rollout_equality.reporting import paper
from rollout_equality.runtime.device import gpu_claim, local_gpu_problem
from rollout_equality.config.load import validated
from rollout_equality.config.checks import (
    baseline_claim,
    claim_reasons,
    dropped_by_overlay,
    experiment_analysis,
    model_kinds,
    resolved_tables,
    run_analysis,
    run_inputs,
    suite_analyses,
)
from rollout_equality.acquire.sources import needs_network, suite_sources
from rollout_equality.config.supervision import model_name as supervision_model
from rollout_equality.config.supervision import runs as supervision_runs
from rollout_equality.config.supervision import study_models

min_version("9.0")


config.update(validated(config))  # rollout_equality.config.load: the schema's defaults in, references checked

# The supervision study's models (rollout_equality.config.supervision): each a local timm checkpoint, prepared and
# measured as the config's own models are.
SUPERVISION = config["supervision"]
SUPERVISION_MODELS = study_models(config)
config["models"].update(SUPERVISION_MODELS)
SUPERVISION_RUNS = [{"objective": o, "seed": s} for o, s in supervision_runs(SUPERVISION)]
SUPERVISION_EXPERIMENTS = [
    {"model": supervision_model(r["objective"], r["seed"]), "dataset": SUPERVISION["test_data"]}
    for r in SUPERVISION_RUNS
]


MODELS = config["models"]
DATASETS = config["datasets"]
TABLES = resolved_tables(config)  # every table: tabular.datasets and the ablation's <table>@<setting>
ABLATION = config["tabular"].get("ablation")
ALBERT_SUITES = config["dynamics"]["albert"]["suites"]

# A local run whose settings ask for a GPU (overlays/gpu.yaml) on a host that cannot give one stops before any job;
# a dry run of it plans, and warns that the run would be refused.
if executor(sys.argv, os.environ, Path(workflow.main_snakefile).parent) == "local":
    _devices = {"extraction.device": config["extraction"]["device"]}
    _devices.update({f"tabular.training.device ({t})": TABLES[t]["training"]["device"] for t in TABLES})
    _asked = sorted({f"{key.split(' (')[0]}: {d}" for key, d in _devices.items() if d.startswith("cuda")})
    _problem = local_gpu_problem(_asked)
    if _problem and not workflow.output_settings.dryrun:
        raise WorkflowError(_problem)
    if _problem and workflow.is_main_process:
        logger.warning(f"Warning: this dry run plans jobs that a real run on this host would refuse: {_problem}")


def command_line_targets():
    """The targets of this Snakemake command line, as Snakemake's own parser reads them (none where it cannot)."""
    from snakemake.cli import get_argument_parser

    try:
        return get_argument_parser().parse_known_args(sys.argv[1:])[0].targets or []
    except SystemExit:
        return []


def config_file():
    """The config file the Snakefile's ``configfile:`` read (overlays are merged into it), or None."""
    overlays = {Path(f).resolve() for f in workflow.overwrite_configfiles}
    files = [Path(f) for f in workflow.configfiles if Path(f).resolve() not in overlays]
    return files[0] if files else None


# An overlay that lists a suite replaces it (Snakemake replaces lists): say so when a suite lost experiments.
if workflow.is_main_process and config_file() is not None:
    for message in dropped_by_overlay(yaml.safe_load(config_file().read_text()), config):
        logger.warning(f"Warning: {message}")


# --- where every file goes: rollout_equality.config.paths states each path template and output key once ---------
# Rules use them as outputs and inputs; the target lists below fill them in.
from rollout_equality.config.paths import (
    ALBERT_INFO,
    ALBERT_RECORDS,
    ALBERT_REPORT,
    BASELINE_CSV,
    BASELINE_FIGURE,
    BASELINE_TEX,
    DATA_MANIFEST,
    DOWNLOAD_CACHE,
    DUMP,
    FIGURE_NAMES,
    HEADS,
    HEADS_ROLLOUT,
    HEAD_TABLES,
    FTT_ABLATION,
    FTT_ABLATION_SECTION,
    FTT_HEADS,
    FTT_HEADS_ROLLOUT,
    FTT_METRICS,
    FTT_MODEL,
    FTT_RECORDS,
    FTT_ROLLOUT,
    FTT_SCORES,
    FTT_SUMMARY,
    MODEL_INFO,
    PAPER_MAIN,
    PAPER_PDF,
    RECORDS,
    ROLLOUT,
    SIMULATIONS,
    SIMULATION_FIGURE,
    SIMULATION_FIGURES,
    SIMULATION_REPORT,
    SOURCES_CHECK,
    SOURCES_REPORT,
    SUITE_FIGURES,
    SUITE_TABLES,
    SUMMARY,
    SUPERVISION_CHECKPOINT,
    SUPERVISION_FILES,
    SUPERVISION_REPORT,
    TABLE_DATA,
    TABLE_MANIFEST,
    TABLE_NAMES,
    TABLE_RAW,
    benchmark_path,
    companions,
    log_path,
)

CHECK_STAMP = time.strftime("%Y%m%dT%H%M%S")  # names this run's SOURCES_REPORT


def reported(paths, captions):
    """``paths`` with the report's caption and category on the entries ``captions`` names (key → (rst, category))."""
    reported_paths = dict(paths)
    for key, (rst, category) in captions.items():
        reported_paths[key] = report(paths[key], caption=f"../report/{rst}", category=category)
    return reported_paths


TABLE_CAPTIONS = {f"html_{key}": ("tables.rst", "Tables") for key in TABLE_NAMES}
FIGURE_CAPTIONS = {f"{name}_png": (f"{name}.rst", "Figures") for name in FIGURE_NAMES}


def albert_run(suite, template):
    """``template`` (ALBERT_RECORDS, ALBERT_INFO) for the ALBERT run of ``suite``."""
    if suite not in ALBERT_SUITES:
        raise ValueError(f"no ALBERT run for suite {suite!r}: add it under dynamics.albert.suites")
    return template.format(**ALBERT_SUITES[suite])


def dynamics_targets(suite):
    """The simulations' tables and figures, and the suite's ALBERT run (when it has one)."""
    targets = [SIMULATION_REPORT["summary"], SIMULATION_FIGURE.format(name="consensus", ext="pdf")]
    if suite in ALBERT_SUITES:
        targets += [ALBERT_REPORT["steps"].format(suite=suite), ALBERT_REPORT["pdf"].format(suite=suite)]
    return targets


def ftt_seeds(table):
    """Seeds trained for a table: its own `seeds`, else tabular.seeds (ablation tables: the ablation's)."""
    return TABLES[table]["seeds"]


def table_preparation(table):
    """What fetching and preparing ``table`` reads (source, task, missing, split, the preprocessing recipe):
    the rules' params, so that a change of seeds or training does not re-prepare the table."""
    entry = TABLES[table]
    recipe = {k: v for k, v in entry["recipe"].items() if k != "binary_head"}  # the head is training's
    return {k: entry[k] for k in ("task", "missing", "source", "split")} | {"recipe": recipe}


def ablation_runs():
    """(table, seed) of every run of the recipe ablation: <table>@<setting> × the ablation's seeds."""
    return [(t, s) for t, e in TABLES.items() if "ablation" in e for s in e["seeds"]]


def ablation_in(suite):
    """Whether ``suite``'s claims table and paper show the recipe ablation (tabular.ablation.suites)."""
    return bool(ABLATION) and suite in ABLATION["suites"]


def ftt_runs(suite):
    """(table, seed) of every FT-Transformer trained and measured by ``suite``."""
    return [(t, s) for t in config["tabular"]["suites"].get(suite, []) for s in ftt_seeds(t)]


def ftt_metrics(suite):
    return [FTT_METRICS.format(tabular=t, seed=s) for t, s in ftt_runs(suite)]


def _alternatives(names):
    return "|".join(re.escape(n) for n in sorted(names)) or "(?!)"


wildcard_constraints:
    model=_alternatives(MODELS),
    dataset=_alternatives(DATASETS),
    tabular=_alternatives(TABLES),
    seed=r"\d+",
    suite=_alternatives(config["suites"]),
    stamp=r"\d{8}T\d{6}",


BASELINE_TARGETS = [BASELINE_CSV, BASELINE_TEX] + [BASELINE_FIGURE.format(ext=e) for e in ("pdf", "png")]


def suite_records(suite, kind="records"):
    """Every records file of ``suite`` of one kind: the layer records (``records``) or each one's companion
    (``rollout``, ``heads``, ``heads_rollout``: rollout_equality.config.paths.COMPANION_SUFFIXES); the transformers /
    timm experiments, then the FT-Transformer runs."""
    exp_template, ftt_template = (
        (RECORDS, FTT_RECORDS) if kind == "records" else (companions(RECORDS)[kind], companions(FTT_RECORDS)[kind])
    )
    paths = [exp_template.format(**e) for e in config["suites"].get(suite, [])]
    return paths + [ftt_template.format(tabular=t, seed=s) for t, s in ftt_runs(suite)]


def suite_dumps(suite):
    """The attention dumps of ``suite``, those marked ``heatmap: true`` first (the heatmap figure shows those)."""
    experiments = sorted(config["suites"].get(suite, []), key=lambda e: not e["heatmap"])
    return [DUMP.format(**e) for e in experiments]


def heatmap_count(suite):
    """How many panels the heatmap figure of ``suite`` has: one per experiment marked ``heatmap: true`` (at least one)."""
    return max(1, sum(e["heatmap"] for e in config["suites"].get(suite, [])))


def suite_targets(suite):
    """Records and per-layer summaries of every experiment of ``suite``, its tables and figures."""
    targets = []
    for exp in config["suites"].get(suite, []):
        targets += [RECORDS.format(**exp), SUMMARY.format(**exp)]
    for table, seed in ftt_runs(suite):
        targets += [FTT_RECORDS.format(tabular=table, seed=seed), FTT_SUMMARY.format(tabular=table, seed=seed)]
    if ftt_runs(suite):
        targets.append(FTT_SCORES.format(suite=suite))
    if suite_records(suite):
        targets += [SUITE_TABLES["claims"].format(suite=suite), SUITE_FIGURES["depth_pdf"].format(suite=suite)]
    if suite_analyses(config, suite):
        targets.append(HEAD_TABLES["heads"].format(suite=suite))
    return targets


def download_targets(suite):
    """Every model, data set and table that ``suite`` (and its ALBERT run) fetches: the local rules' outputs."""
    sources = suite_sources(config, suite)
    targets = [MODEL_INFO.format(model=m) for m in sources["models"]]
    targets += [DATA_MANIFEST.format(dataset=d) for d in sources["datasets"]]
    return targets + [TABLE_RAW.format(tabular=t) for t in sources["tables"]]


def model_source(name):
    """What preparing model ``name`` waits for: the preflight for a network source, a study model's checkpoint."""
    if name in SUPERVISION_MODELS:
        return [SUPERVISION_FILES["info"].format(**r) for r in SUPERVISION_RUNS if supervision_model(**r) == name]
    return source_check("models", name)


def supervision_targets():
    """The supervision study's report (tables, figure, sentences), and each experiment's per-layer summary."""
    return list(SUPERVISION_REPORT.values()) + [SUMMARY.format(**e) for e in SUPERVISION_EXPERIMENTS]


def source_check(kind, name):
    """The preflight's output, for the download of a source that needs the network (else nothing). Marked
    ancient (a new check does not make a finished download stale); the check is temporary, so it runs again
    whenever a download is to be made."""
    entries = {"models": MODELS, "datasets": DATASETS, "tables": TABLES}[kind]
    return [ancient(SOURCES_CHECK)] if needs_network(kind, entries[name]) else []


PAPER_TARGETS = BASELINE_TARGETS + suite_targets("paper")
OFFLINE_TARGETS = BASELINE_TARGETS + suite_targets("offline")


def paper_reads(suite):
    """The generated tables and figures paper/main.tex reads for ``suite``, from its own \\input and
    \\includegraphics lines (rollout_equality.reporting.paper.inputs): a changed table rebuilds the PDF."""
    main = Path(PAPER_MAIN)
    return paper.inputs(main, suite) if main.exists() else []
