import re
import sys
from pathlib import Path

from snakemake.utils import min_version, validate

sys.path.insert(0, str(Path(workflow.main_snakefile).parent / "src"))  # this checkout's library first
from rollout_equality import paper
from rollout_equality.claims import baseline_claim
from rollout_equality.config import check_references, claim_reasons, resolved_tables

min_version("9.0")


validate(config, "../schemas/config.schema.yaml")


MODELS = config["models"]
DATASETS = config["datasets"]
TABLES = resolved_tables(config)  # every table: tabular.datasets and the ablation's <table>@<setting>
ABLATION = config["tabular"].get("ablation")
ALBERT_SUITES = config["dynamics"]["albert"]["suites"]

check_references(config)


# --- where every file goes: each path template is stated once, here --------------------------------
# Rules use them as outputs and inputs; the target lists below fill them in.

MODEL_INFO = "resources/models/{model}/model.json"
DATA_MANIFEST = "resources/data/{dataset}/manifest.json"
TABLE_RAW = "resources/tabular/{tabular}/raw.parquet"
TABLE_DATA = "resources/tabular/{tabular}/data.npz"
TABLE_MANIFEST = "resources/tabular/{tabular}/manifest.json"
DOWNLOAD_CACHE = "resources/cache"  # OpenML's and scikit-learn's caches, in their own layouts

RECORDS = "results/records/{model}/{dataset}.parquet"
ROLLOUT = "results/records/{model}/{dataset}.rollout.parquet"
DUMP = "results/attention/{model}/{dataset}.npz"
SUMMARY = "results/summaries/{model}/{dataset}.csv"

FTT_MODEL = "results/ftt/{tabular}/seed{seed}/model.pt"
FTT_METRICS = "results/ftt/{tabular}/seed{seed}/metrics.json"
FTT_RECORDS = "results/records/ftt/{tabular}/seed{seed}.parquet"
FTT_ROLLOUT = "results/records/ftt/{tabular}/seed{seed}.rollout.parquet"
FTT_SUMMARY = "results/summaries/ftt/{tabular}/seed{seed}.csv"
FTT_SCORES = "results/tables/{suite}/ftt_scores.csv"
FTT_ABLATION = {  # what write_ftt_ablation writes (rollout_equality.tables, .figures)
    "summary": "results/tables/ftt_ablation/summary.csv",
    "layers": "results/tables/ftt_ablation/layers.csv",
    "html": "results/tables/ftt_ablation/summary.html",
    "tex": "paper/tables/ftt_ablation.tex",
    "pdf": "paper/figures/ftt_ablation.pdf",
    "png": "paper/figures/ftt_ablation.png",
}
FTT_ABLATION_SECTION = "paper/tables/{suite}/ftt_ablation_section.tex"

BASELINE_CSV = "results/baseline/random_baseline.csv"
BASELINE_TEX = "paper/tables/baseline.tex"
BASELINE_FIGURE = "paper/figures/baseline_rate.{ext}"

SUITE_TABLES = {  # what write_suite_tables writes (rollout_equality.tables)
    "claims": "results/tables/{suite}/claims.csv",
    "rates": "results/tables/{suite}/model_rates.csv",
    "depth": "results/tables/{suite}/depth_rates.csv",
    "rollout": "results/tables/{suite}/rollout_summary.csv",
    "special": "results/tables/{suite}/special_tokens.csv",
    "ftt": "results/tables/{suite}/ftt.csv",
    **{
        f"html_{key}": f"results/tables/{{suite}}/{name}.html"
        for key, name in (
            ("claims", "claims"),
            ("rates", "model_rates"),
            ("depth", "depth_rates"),
            ("rollout", "rollout_summary"),
            ("special", "special_tokens"),
            ("ftt", "ftt"),
        )
    },
    "tex_claims": "paper/tables/{suite}/claims.tex",
    "tex_rates": "paper/tables/{suite}/model_rates.tex",
    "tex_depth": "paper/tables/{suite}/depth_rates.tex",
    "tex_rollout": "paper/tables/{suite}/rollout_summary.tex",
    "tex_ftt": "paper/tables/{suite}/ftt.tex",
    "tex_macros": "paper/tables/{suite}/macros.tex",
}
SUITE_FIGURES = {  # what write_suite_figures draws (rollout_equality.figures)
    f"{name}_{ext}": f"paper/figures/{{suite}}/{name}.{ext}"
    for name in ("depth", "slack", "rollout", "heatmap")
    for ext in ("pdf", "png")
}
PAPER_PDF = "paper/suite-{suite}.pdf"

SIMULATIONS = {  # what simulate_dynamics writes (rollout_equality.dynamics.report)
    name: f"results/dynamics/simulations/{name}.{ext}"
    for name, ext in (
        ("trajectory", "csv"),
        ("stability", "csv"),
        ("basin", "csv"),
        ("beta_sweep", "csv"),
        ("info", "json"),
        ("tokens", "npz"),
    )
}
SIMULATION_REPORT = {
    "summary": "results/tables/dynamics/simulations.csv",
    "summary_html": "results/tables/dynamics/simulations.html",
    "stability": "paper/tables/dynamics/stability.tex",
    "basin": "paper/tables/dynamics/basin.tex",
    "sweep": "paper/tables/dynamics/beta_sweep.tex",
}
SIMULATION_FIGURE = "paper/figures/dynamics/{name}.{ext}"
ALBERT_RECORDS = "results/dynamics/albert/{model}/{dataset}.parquet"
ALBERT_INFO = "results/dynamics/albert/{model}/{dataset}.json"
ALBERT_REPORT = {
    "steps": "results/tables/dynamics/{suite}/albert_steps.csv",
    "steps_html": "results/tables/dynamics/{suite}/albert_steps.html",
    "tex": "paper/tables/dynamics/{suite}/albert.tex",
    "pdf": "paper/figures/dynamics/{suite}/albert.pdf",
    "png": "paper/figures/dynamics/{suite}/albert.png",
}


SIMULATION_FIGURES = {
    f"{name}_{ext}": SIMULATION_FIGURE.format(name=name, ext=ext)
    for name in ("consensus", "bipartite", "multihead", "asymmetric", "basin")
    for ext in ("pdf", "png")
}


def reported(paths, captions):
    """``paths`` with the report's caption and category on the entries ``captions`` names (key → (rst, category))."""
    reported_paths = dict(paths)
    for key, (rst, category) in captions.items():
        reported_paths[key] = report(paths[key], caption=f"../report/{rst}", category=category)
    return reported_paths


TABLE_CAPTIONS = {
    f"html_{key}": ("tables.rst", "Tables") for key in ("claims", "rates", "depth", "rollout", "special", "ftt")
}
FIGURE_CAPTIONS = {f"{name}_png": (f"{name}.rst", "Figures") for name in ("depth", "slack", "rollout", "heatmap")}


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


BASELINE_TARGETS = [BASELINE_CSV, BASELINE_TEX] + [BASELINE_FIGURE.format(ext=e) for e in ("pdf", "png")]


def suite_records(suite, rollout=False):
    """Every records file of ``suite`` (layer records, or with ``rollout`` their rollout companions):
    the transformers / timm experiments, then the FT-Transformer runs."""
    exp_template, ftt_template = (ROLLOUT, FTT_ROLLOUT) if rollout else (RECORDS, FTT_RECORDS)
    paths = [exp_template.format(**e) for e in config["suites"].get(suite, [])]
    return paths + [ftt_template.format(tabular=t, seed=s) for t, s in ftt_runs(suite)]


def suite_dumps(suite):
    """The attention dumps of ``suite``, those marked ``heatmap: true`` first (the heatmap figure shows the first)."""
    experiments = sorted(config["suites"].get(suite, []), key=lambda e: not e["heatmap"])
    return [DUMP.format(**e) for e in experiments]


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
    return targets


def download_targets(suite):
    """Every model, data set and table that ``suite`` (and its ALBERT run) fetches: the local rules' outputs."""
    experiments = list(config["suites"].get(suite, []))
    if suite in ALBERT_SUITES:
        experiments.append(ALBERT_SUITES[suite])
    targets = [MODEL_INFO.format(**e) for e in experiments] + [DATA_MANIFEST.format(**e) for e in experiments]
    targets += [TABLE_RAW.format(tabular=t) for t in config["tabular"]["suites"].get(suite, [])]
    if ablation_in(suite):  # the recipe ablation's tables (each setting's own rows)
        targets += [TABLE_RAW.format(tabular=t) for t in dict.fromkeys(t for t, _ in ablation_runs())]
    return list(dict.fromkeys(targets))


PAPER_TARGETS = BASELINE_TARGETS + suite_targets("paper")
OFFLINE_TARGETS = BASELINE_TARGETS + suite_targets("offline")


def paper_reads(suite):
    """The generated tables and figures paper/main.tex reads for ``suite``, from its own \\input and
    \\includegraphics lines (rollout_equality.paper.inputs): a changed table rebuilds the PDF."""
    main = Path("paper/main.tex")
    return paper.inputs(main, suite) if main.exists() else []
